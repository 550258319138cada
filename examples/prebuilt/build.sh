#!/bin/sh
# Stands for "the vendor's two builds": two static programs, crc-i386 and crc-x86_64, beside
# this script. Needs gcc-multilib (the i386 static C library) to make the i386 one.
set -e
cd "$(dirname "$0")"
gcc -O2 -m32 -static -o crc-i386 crc.c
gcc -O2 -m64 -static -o crc-x86_64 crc.c
echo "built $(pwd)/crc-i386 and $(pwd)/crc-x86_64"
