#!/usr/bin/env bash
# Validate every ```mermaid block of a markdown file with mermaid's own parser (the mermaid CLI, mmdc), rendering
# each block to PNG and SVG. Exits non-zero when a block does not parse or render.
#
#   scripts/validate_mermaid.sh extracted/small_model/report.md [OUT_DIR]
#
# Installs what it needs when missing: Debian's chromium (apt-get) and @mermaid-js/mermaid-cli (npm) into
# $HARVEST_MERMAID_DIR (default ~/.cache/harvest-mermaid, outside the repository). Puppeteer never downloads a
# browser: it is pointed at /usr/bin/chromium.
#   --install-only   install and exit (no markdown file needed)
set -euo pipefail

TOOLS="${HARVEST_MERMAID_DIR:-$HOME/.cache/harvest-mermaid}"
CHROMIUM="${HARVEST_CHROMIUM:-/usr/bin/chromium}"
MMDC="$TOOLS/node_modules/.bin/mmdc"
if [ ! -x "$MMDC" ] && command -v mmdc >/dev/null; then MMDC="$(command -v mmdc)"; fi
export PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1

install() {
    if [ ! -x "$CHROMIUM" ]; then
        echo "installing chromium (apt-get)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
    if [ ! -x "$MMDC" ]; then
        echo "installing @mermaid-js/mermaid-cli into $TOOLS (npm)" >&2
        mkdir -p "$TOOLS"
        (cd "$TOOLS" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-fund --no-audit @mermaid-js/mermaid-cli >/dev/null)
    fi
    cat >"$TOOLS/puppeteer.json" <<EOF
{"executablePath": "$CHROMIUM",
 "args": ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync"]}
EOF
}

if [ "${1:-}" = "--install-only" ]; then
    install
    echo "$MMDC"
    exit 0
fi

REPORT="${1:?usage: validate_mermaid.sh REPORT.md [OUT_DIR] | --install-only}"
OUT="${2:-$(mktemp -d)}"
[ -f "$REPORT" ] || { echo "no such file: $REPORT" >&2; exit 2; }
install
mkdir -p "$OUT"

# Split the markdown into one .mmd file per ```mermaid block.
awk -v out="$OUT" '
    /^```mermaid[[:space:]]*$/ { n++; file = sprintf("%s/block_%02d.mmd", out, n); inside = 1; next }
    inside && /^```[[:space:]]*$/ { inside = 0; close(file); next }
    inside { print > file }
' "$REPORT"

shopt -s nullglob
blocks=("$OUT"/block_*.mmd)
if [ "${#blocks[@]}" -eq 0 ]; then
    echo "no mermaid blocks in $REPORT" >&2
    exit 1
fi

failed=0
for block in "${blocks[@]}"; do
    base="${block%.mmd}"
    for ext in svg png; do
        if ! "$MMDC" --quiet -p "$TOOLS/puppeteer.json" -i "$block" -o "$base.$ext" -b white -s 2 >"$base.$ext.log" 2>&1; then
            echo "FAIL $block ($ext):" >&2
            cat "$base.$ext.log" >&2
            failed=1
            break
        fi
    done
    [ "$failed" -eq 0 ] && echo "ok   $block -> $base.svg, $base.png"
done
exit "$failed"
