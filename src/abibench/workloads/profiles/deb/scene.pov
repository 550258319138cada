// deb-povray: a fixed scene of reflective and refractive spheres on a checkered plane.
#version 3.7;
global_settings { assumed_gamma 1.0 max_trace_level 8 }
camera { location <0, 3, -9> look_at <0, 1, 0> angle 50 }
light_source { <-6, 10, -8> color rgb <1, 1, 1> }
light_source { <8, 6, -3> color rgb <0.5, 0.5, 0.6> }
plane { y, 0 pigment { checker color rgb <0.9, 0.9, 0.9> color rgb <0.2, 0.3, 0.4> scale 1.5 }
        finish { reflection 0.2 } }
#declare I = 0;
#while (I < 12)
  #declare A = I * 30;
  sphere { <3 * cos(radians(A)), 0.7 + 0.15 * mod(I, 3), 3 * sin(radians(A)) + 2>, 0.6
    pigment { color rgb <mod(I, 2), 0.4 + 0.05 * I, 1 - mod(I, 2)> }
    finish { reflection 0.35 specular 0.6 roughness 0.02 phong 0.5 } }
  #declare I = I + 1;
#end
sphere { <0, 1.5, 2>, 1.4
  pigment { color rgbf <0.95, 0.97, 1, 0.9> }
  finish { reflection 0.1 specular 0.9 roughness 0.001 }
  interior { ior 1.5 } }
