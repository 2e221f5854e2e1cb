"""py_loop.py LIBCUDART N DEPTH: N x cudaStreamSynchronize through ctypes
from a Python stack DEPTH frames deep; prints "loop N calls X ns/call"."""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
sync = lib.cudaStreamSynchronize
sync.argtypes = [ctypes.c_void_p]
n, depth = int(sys.argv[2]), int(sys.argv[3])


def run(k):
    if k > 1:
        return run(k - 1)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        sync(None)
    return time.perf_counter_ns() - t0


# The tracer registers the interpreter shortly after it starts.
time.sleep(0.5)
ns = run(depth)
print("loop %d calls %.1f ns/call" % (n, ns / n), flush=True)
