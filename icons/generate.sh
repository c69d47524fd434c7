#!/usr/bin/env bash
# Draws the app icon (an orrery: a sun, two orbits, two planets) with ImageMagick and writes
# the RGBA PNGs Tauri needs (an RGB icon fails the build, hence PNG32:).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
convert -size 512x512 xc:none -fill '#1d2340' -draw 'roundrectangle 16,16 496,496 96,96' \
    -fill none -stroke '#8fa3ff' -strokewidth 14 -draw 'ellipse 256,256 170,170 0,360' \
    -stroke '#5d6fd1' -strokewidth 10 -draw 'ellipse 256,256 100,100 0,360' \
    -stroke none -fill '#ffcc4d' -draw 'circle 256,256 256,212' \
    -fill '#e8ecff' -draw 'circle 426,256 426,226' -fill '#8fe3c0' -draw 'circle 185,185 185,163' \
    PNG32:icon.png
convert icon.png -resize 32x32 PNG32:32x32.png
convert icon.png -resize 128x128 PNG32:128x128.png
convert icon.png -resize 256x256 PNG32:128x128@2x.png
# The hicolor sizes of the Linux packages' desktop entry (scripts/package.sh).
for size in 16 24 48 64 256; do
    convert icon.png -resize "${size}x${size}" "PNG32:${size}x${size}.png"
done
