#!/bin/bash
# trace on the REAL CUDA 13 runtime, driver (stub) and NCCL: every hooked
# function shows up with the arguments the program passed and the return
# code it got; _ptsz/_ptds variants are attached too; an nvcc-built
# program's kernels are named. Real BPF, as root.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
for f in real_cuda_calls named_kernels; do
	[ -x "$FIX/$f" ] || { echo "missing fixture $FIX/$f (make fixtures)"; exit 1; }
done
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { sqlite3 "$D/t.db" "$1"; }

"$CW_BIN" trace --db "$D/t.db" --no-view -- "$FIX/real_cuda_calls" >"$D/out" 2>"$D/err"
rc=$?
cat "$D/err"
[ $rc = 0 ] || fail "trace exited $rc (the command's status is 0)"
grep -q '^done missing=0' "$D/out" || fail "workload did not finish"

# Every call the program made, with its return code.
n=0
while read -r _ name ret; do
	op=${name%_ptsz}; op=${op%_ptds}; op=${op%_v2}
	got=$(q "SELECT count(*) FROM events WHERE op='$op' AND ret=$ret")
	[ "$got" -ge 1 ] || fail "$name: no $op event with ret $ret"
	n=$((n + 1))
done < <(grep '^call ' "$D/out")
echo "checked $n calls"
[ $n -ge 80 ] || fail "only $n calls printed"

check() { # SQL condition, what
	local got
	got=$(q "SELECT count(*) FROM events WHERE $1")
	[ "$got" -ge 1 ] || fail "$2: nothing matches $1"
}
check "op='cudaSetDevice' AND arg0=3 AND ret=35" "cudaSetDevice(3)"
check "op='cudaMalloc' AND arg1=123456 AND bytes=123456" "cudaMalloc size"
check "op='cudaMemcpy' AND arg2=7777 AND arg3=1 AND detail='HtoD' AND bytes=7777" "cudaMemcpy bytes/kind"
check "op='cudaMemcpy' AND arg2=7778" "cudaMemcpy_ptds"
check "op='cudaMemcpyAsync' AND arg2=8889 AND arg3=2" "cudaMemcpyAsync_ptsz"
check "op='cudaMemcpy2D' AND bytes=320 AND arg3=3" "cudaMemcpy2D width*height, kind from the stack"
check "op='cudaMemcpy2DAsync' AND bytes=80 AND arg3=1" "cudaMemcpy2DAsync"
check "op='cudaMemcpyPeer' AND bytes=9999" "cudaMemcpyPeer"
check "op='cudaMemset' AND bytes=2048" "cudaMemset"
check "op='cudaLaunchKernel' AND arg0=57005 AND arg1=8589934593 AND arg2=3 AND arg3=21474836484" "cudaLaunchKernel func/grid/block"
check "op='cudaLaunchKernel' AND arg0=57006" "cudaLaunchKernel_ptsz"
check "op='cudaLaunchKernelExC' AND arg0=48879" "cudaLaunchKernelExC func"
check "op='cudaStreamSynchronize' AND arg0=85" "cudaStreamSynchronize"
check "op='cudaStreamSynchronize' AND arg0=86" "cudaStreamSynchronize_ptsz"
check "source='graph' AND op='cudaGraphLaunch' AND arg0=136" "cudaGraphLaunch"
check "source='driver' AND op='cuLaunchKernel' AND arg0=61453 AND arg1=1 AND arg2=2 AND arg3=3" "cuLaunchKernel"
check "op='cuLaunchKernel' AND arg0=61454" "cuLaunchKernel_ptsz"
check "op='cuLaunchKernelEx' AND arg0=61455" "cuLaunchKernelEx"
check "op='cuLaunchKernelEx' AND arg0=61456" "cuLaunchKernelEx_ptsz"
check "op='cuMemAlloc' AND bytes=10000 AND ret=34" "cuMemAlloc_v2"
check "op='cuMemAllocAsync' AND bytes=10101" "cuMemAllocAsync_ptsz"
check "op='cuMemcpy' AND bytes=10103" "cuMemcpy_ptds"
check "op='cuMemcpyHtoD' AND bytes=10005 AND detail='HtoD'" "cuMemcpyHtoD_v2"
check "op='cuMemcpyHtoD' AND bytes=10105" "cuMemcpyHtoD_v2_ptds"
check "op='cuMemcpyDtoHAsync' AND bytes=10108 AND detail='DtoH'" "cuMemcpyDtoHAsync_v2_ptsz"
check "op='cuMemcpyDtoD' AND bytes=10109 AND detail='DtoD'" "cuMemcpyDtoD_v2_ptds"
check "source='graph' AND op='cuGraphLaunch' AND arg0=137" "cuGraphLaunch_ptsz"
check "op='cuMemCreate' AND bytes=10011" "cuMemCreate"
check "op='cuCtxSetCurrent' AND arg0=66" "cuCtxSetCurrent"
# NCCL: count, datatype, reduction op or peer/root, comm.
comm=$(q "SELECT arg3 FROM events WHERE op='ncclAllReduce'")
[ -n "$comm" ] && [ "$comm" != 0 ] || fail "ncclAllReduce comm pointer missing"
check "op='ncclAllReduce' AND arg0=1000 AND arg1=7 AND arg2=0 AND ret=4" "ncclAllReduce"
check "op='ncclAllGather' AND arg0=500 AND arg1=7 AND arg3=$comm" "ncclAllGather"
check "op='ncclReduceScatter' AND arg0=250 AND arg2=1 AND arg3=$comm" "ncclReduceScatter"
check "op='ncclBroadcast' AND arg0=100 AND arg2=1 AND arg3=$comm" "ncclBroadcast root"
check "op='ncclBcast' AND arg0=200 AND arg2=3 AND arg3=$comm" "ncclBcast root"
check "op='ncclReduce' AND arg0=300 AND arg2=2 AND arg3=$comm" "ncclReduce op, comm from the stack"
check "op='ncclSend' AND arg0=400 AND arg2=5 AND arg3=$comm" "ncclSend peer"
check "op='ncclRecv' AND arg0=600 AND arg2=6 AND arg3=$comm" "ncclRecv peer"
check "op='ncclCommInitRank' AND arg0=4 AND arg2=2" "ncclCommInitRank nranks/rank"
check "op='ncclCommInitRankConfig' AND arg0=4 AND arg2=2" "ncclCommInitRankConfig"
check "op='ncclCommSplit' AND arg0=1 AND arg1=2" "ncclCommSplit color/key"
check "op='ncclGroupStart' AND ret=0" "ncclGroupStart"
# The communicator id: FNV-1a over the 16 words of the 128-byte
# ncclUniqueId, read from the caller's stack (passed by value: at sp + 8
# at the first instruction), or through the pointer of the scalable init.
uid_hash() { # byte i = A*i + B
	python3 -c '
import struct, sys
a, b = int(sys.argv[1]), int(sys.argv[2])
raw = bytes((a * i + b) & 0xff for i in range(128))
h = 0xcbf29ce484222325
for (w,) in struct.iter_unpack("<Q", raw):
    h = ((h ^ w) * 0x100000001b3) & (2**64 - 1)
h = h or 1
print(h - 2**64 if h >= 2**63 else h)' "$1" "$2"
}
h1=$(uid_hash 7 1)
check "op='ncclCommInitRank' AND arg1=$h1 AND arg0=4 AND arg2=2" "ncclCommInitRank communicator id"
check "op='ncclCommInitRankConfig' AND arg1=$h1" "ncclCommInitRankConfig communicator id"
check "op='ncclCommInitRankScalable' AND arg1=$(uid_hash 3 5) AND arg0=8 AND arg2=5" "ncclCommInitRankScalable id by pointer"
check "op='ncclAlltoAll' AND arg0=700 AND arg1=7 AND arg3=$comm AND bytes=2800" "ncclAlltoAll"
check "op='ncclCommGetAsyncError' AND arg3=$comm" "ncclCommGetAsyncError"
check "op='ncclCommFinalize' AND arg3=0" "ncclCommFinalize"
check "op='ncclCommAbort'" "ncclCommAbort"
check "op='ncclAllReduce' AND bytes=4000" "ncclAllReduce bytes (count x float32)"
# nccl_calls: every collective and p2p call with its stream (the 7th and
# 8th arguments of AllReduce and Reduce come from the stack), count,
# datatype, bytes, reduction op, root/peer and a sequence number.
nc() { q "SELECT count(*) FROM nccl_calls WHERE $1"; }
for c in "op='ncclAllReduce' AND count=1000 AND datatype=7 AND bytes=4000 AND redop=0 AND stream=119" \
	"op='ncclAllGather' AND count=500 AND bytes=2000 AND stream=119" \
	"op='ncclReduceScatter' AND count=250 AND redop=1 AND stream=119" \
	"op='ncclBroadcast' AND count=100 AND peer=1 AND stream=119" \
	"op='ncclBcast' AND count=200 AND peer=3 AND stream=119" \
	"op='ncclReduce' AND count=300 AND redop=2 AND peer=1 AND stream=119" \
	"op='ncclSend' AND count=400 AND peer=5 AND stream=119 AND seq=1" \
	"op='ncclRecv' AND count=600 AND peer=6 AND stream=119 AND seq=1" \
	"op='ncclAlltoAll' AND count=700 AND stream=119"; do
	[ "$(nc "$c AND comm=$comm AND seq >= 1 AND ret IS NOT NULL")" = 1 ] ||
		fail "nccl_calls: $c: $(q "SELECT * FROM nccl_calls")"
done

# Host facts and the process.
[ "$(q "SELECT count(*) FROM sessions WHERE kind='trace' AND cuda LIKE '13.%' AND kernel IS NOT NULL AND command LIKE '%real_cuda_calls%' AND ended_wall_ns IS NOT NULL")" = 1 ] \
	|| fail "session row: $(q 'SELECT * FROM sessions')"
pid=$(q "SELECT DISTINCT pid FROM events WHERE op='cudaMalloc'")
[ "$(q "SELECT count(*) FROM processes WHERE pid=$pid")" = 1 ] || fail "no process row for $pid"
[ "$(q "SELECT value FROM counters WHERE name='trace.ring_drops.cuda'")" = 0 ] || fail "drops counter"

# nvcc-built kernels: names registered at startup, launches carry them.
"$CW_BIN" trace --db "$D/k.db" --no-view -- "$FIX/named_kernels" >"$D/kout" 2>&1 || fail "trace named_kernels: $(cat "$D/kout")"
kn=$(sqlite3 "$D/k.db" "SELECT group_concat(name, ' ') FROM kernel_names")
echo "kernel names: $kn"
# Registered mangled, stored demangled.
case $kn in *"cw_saxpy_kernel(float, float const*, float*, int)"*) ;; *) fail "cw_saxpy_kernel not registered/demangled";; esac
case $kn in *"void cwtest::scale_kernel<float>(float*, float, int)"*) ;; *) fail "scale_kernel not registered/demangled";; esac
[ "$(sqlite3 "$D/k.db" "SELECT count(*) FROM events WHERE op='cudaLaunchKernel' AND detail='cw_saxpy_kernel(float, float const*, float*, int)'")" -ge 1 ] \
	|| fail "launch not named: $(sqlite3 "$D/k.db" "SELECT op, arg0, detail FROM events WHERE source='cuda'")"
sqlite3 "$D/k.db" "PRAGMA integrity_check" | grep -qx ok || fail "integrity"
echo "ok"
