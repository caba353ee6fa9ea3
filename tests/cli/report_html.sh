#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Render the HTML report of `numakit report` in headless Chromium and check the screenshot is not
# trivial (a blank or broken page compresses to a few KiB).  Exit 77 (skipped) without Chromium.
#   report_html.sh analysis TEST_ANALYSIS    the demo report written by test_analysis (no reader needed)
#   report_html.sh cli NUMAKIT PROFILE.nkp   numakit report --html of a profile file (or a job's folder)
set -u
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
	echo "report_html: no chromium, skipped"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "${1:-}" in
analysis)
	NK_ANALYSIS_DUMP="$tmp" "$2" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
	;;
cli)
	"$2" report --html "$tmp/report.html" "$3" >/dev/null || exit 1
	;;
*)
	echo "usage: report_html.sh analysis TEST | cli NUMAKIT PROFILE" >&2
	exit 2
	;;
esac
html="$tmp/report.html"
[ -s "$html" ] || { echo "report_html: no HTML written"; exit 1; }
if grep -q -E 'https?://|<script|<link ' "$html"; then
	echo "report_html: the page is not self-contained"
	exit 1
fi
HOME="$tmp" timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--user-data-dir="$tmp/profile" --screenshot="$tmp/shot.png" --window-size=1200,1600 \
	"file://$html" >"$tmp/chrome.log" 2>&1
if [ ! -s "$tmp/shot.png" ]; then
	echo "report_html: chromium wrote no screenshot"
	cat "$tmp/chrome.log"
	exit 1
fi
python3 - "$tmp/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1200, 1600), "unexpected size %dx%d" % (w, h)
# decode the image data to count distinct colours in a sample of rows
pos, idat = 8, b""
bitdepth, ctype = data[24], data[25]
while pos < len(data):
    n, t = struct.unpack(">I4s", data[pos:pos + 8])
    if t == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}.get(ctype)
assert bitdepth == 8 and bpp, "unexpected PNG format"
stride = w * bpp + 1
colours, prev = set(), bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 8 == 0:
        for x in range(0, w, 4):
            colours.add(bytes(line[x * bpp:x * bpp + 3]))
red = sum(1 for c in colours if c[0] > 180 and c[1] < 120 and c[2] < 120)
green = sum(1 for c in colours if c[1] > 120 and c[0] < 120 and c[2] < 120)
print("report_html: %d colours sampled, %d red-ish, %d green-ish" % (len(colours), red, green))
assert len(colours) > 20, "the page looks blank"
assert red and green, "no local/remote bars visible"
PY
