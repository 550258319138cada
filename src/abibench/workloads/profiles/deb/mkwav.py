"""A deterministic 16-bit stereo 44.1 kHz WAV (tones, chirps and noise) for deb-flac."""

import math
import random
import struct
import sys
import wave

out, seconds = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
rate = 44100
frames = bytearray()
for i in range(rate * seconds):
    t = i / rate
    left = 0.4 * math.sin(2 * math.pi * 440 * t) + 0.2 * math.sin(2 * math.pi * (200 + 50 * t) * t)
    right = 0.3 * math.sin(2 * math.pi * 660 * t + 0.5) + 0.05 * (rng.random() - 0.5)
    frames += struct.pack("<hh", int(left * 32767 * 0.9), int(right * 32767 * 0.9))
with wave.open(out, "wb") as w:
    w.setnchannels(2)
    w.setsampwidth(2)
    w.setframerate(rate)
    w.writeframes(bytes(frames))
