-- deb-gcc: run (untimed, after every sample) by the Lua that the measured compiler just built,
-- on its own ABI, inside its sysroot: lua.out gcc-check.lua lua.out
-- It prints a known answer over integer, floating-point, string and table code, and the size
-- class of the program the compiler wrote; the profile's [validate] after_match pins both.

-- integers: primes below 20000 (a sieve), and a 64-bit multiply-xorshift hash of them
local sieve, count, h = {}, 0, 0
for i = 2, 19999 do
  if not sieve[i] then
    count = count + 1
    h = ((h ~ i) * 0x100000001b3) & 0x7fffffffffffffff
    for j = i * i, 19999, i do sieve[j] = true end
  end
end

-- floating point: a series and libm, printed to 12 significant digits
local s = 0.0
for k = 1, 100000 do s = s + 1.0 / (k * k) end
local f = string.format("%.12g %.12g %.12g", s, math.sqrt(2) * math.exp(1), math.sin(1e3))

-- strings and tables: words sorted, joined, reversed, and a pattern substitution
local words = {}
for w in ("the quick brown fox jumps over the lazy dog"):gmatch("%a+") do
  words[#words + 1] = w:upper()
end
table.sort(words)
local joined = table.concat(words, "-"):reverse():gsub("[AEIOU]", "*")

print(string.format("answer: %d %d %s %s", count, h, f, joined))

-- the program the compiler wrote: Lua 5.4 at -O0 to -O3 is 235-390 KiB on i386 and amd64 (one
-- translation unit, not stripped); an empty or truncated one is not in the class
local size = assert(io.open(arg[1], "rb")):seek("end")
if size >= 128 * 1024 and size < 1024 * 1024 then
  print("size class: 128K-1M")
else
  print(string.format("size class: none (%d bytes)", size))
end
