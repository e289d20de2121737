p() { out=$(timeout 30 python bench/hang_probe.py "$@" 2>&1); if echo "$out" | grep -q "RESULT ok"; then echo "ok   $* ${HANG_FIXED:+fixed} ${HANG_NOSTATE:+nostate}"; else echo "HANG $* ${HANG_FIXED:+fixed} ${HANG_NOSTATE:+nostate} $(echo "$out" | grep -E 'Error|error' | tail -1)"; fi; }
export HANG_S=${HANG_S:-6}
HANG_FIXED=1 p 2048 64 32
HANG_FIXED=1 p 4096 16 32
HANG_NOSTATE=1 p 2048 64 32
p 2048 64 1
p 2048 64 4
p 1024 64 32
p 1024 64 32
p 768 64 32
p 512 64 32
p 512 64 32
p 512 64 32
p 16384 1 1
