"""infer_loop: a model's forward pass in a loop under torch.no_grad, eager
and replayed from a CUDA graph, each iteration synchronized and timed, for
bench/gpu/run.sh.

  python3 infer_loop.py --out FILE [--iters N] [--warmup W]          (PyTorch, cuda)
  python3 infer_loop.py --dry LIBCUDART --out FILE [--iters N] ...   (stand-in)

Lines run.sh checks carry "# MARK MODE infer". Writes one JSON object to
--out: per-iteration seconds of the eager loop and of the graph replays."""
import argparse
import ctypes
import json
import os
import sys
import time


def gpu_setup():
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).to(dev).eval()
    x = torch.randn(64, 1024, device=dev)
    static_in = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_out = model(static_in)
    torch.cuda.synchronize()
    return torch, model, x, static_in, static_out, graph


def gpu_eager(ctx):
    torch, model, x = ctx[0], ctx[1], ctx[2]
    with torch.no_grad():
        out = model(x)  # MARK gpu infer
    torch.cuda.synchronize()
    return out


def gpu_replay(ctx):
    torch, _, x, static_in, static_out, graph = ctx
    static_in.copy_(x)
    graph.replay()  # MARK gpu infer
    torch.cuda.synchronize()
    return static_out


def gpu_info(ctx):
    torch = ctx[0]
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0)}


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def dry_setup(lib):
    rt = ctypes.CDLL(lib)
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    rt.cudaGraphLaunch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    stubs = []
    for name in ("cw_dry_infer_gemm", "cw_dry_infer_gelu"):
        stub = ctypes.create_string_buffer(16)
        cname = ctypes.create_string_buffer(name.encode())
        rt.__cudaRegisterFunction(None, stub, cname, cname, -1, None, None, None, None, None)
        stubs.append((stub, cname))
    k = [ctypes.cast(s[0], ctypes.c_void_p) for s in stubs]
    g, b = Dim3(64, 1, 1), Dim3(128, 1, 1)
    stream, graph, execg = ctypes.c_void_p(0x51), ctypes.c_void_p(), ctypes.c_void_p()
    rt.cudaStreamBeginCapture(stream, 0)
    for f in k:
        rt.cudaLaunchKernel(f, g, b, None, 0, stream)
    rt.cudaStreamEndCapture(stream, ctypes.byref(graph))
    rt.cudaGraphInstantiate(ctypes.byref(execg), graph, ctypes.c_ulonglong(0))
    return rt, k, g, b, stream, execg, stubs


def dry_eager(ctx):
    rt, k, g, b = ctx[:4]
    for f in k:
        rt.cudaLaunchKernel(f, g, b, None, 0, None)  # MARK dry infer
    return rt.cudaStreamSynchronize(None)


def dry_replay(ctx):
    rt, stream, execg = ctx[0], ctx[4], ctx[5]
    rt.cudaGraphLaunch(execg, stream)  # MARK dry infer
    return rt.cudaStreamSynchronize(stream)


def timed(fn, ctx, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(ctx)
        times.append(time.perf_counter() - t0)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dry", metavar="LIBCUDART")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.dry:
        ctx, eager, replay = dry_setup(a.dry), dry_eager, dry_replay
        info = {"mode": "dry", "lib": a.dry}
    else:
        ctx, eager, replay = gpu_setup(), gpu_eager, gpu_replay
        info = dict(mode="gpu", **gpu_info(ctx))
    timed(eager, ctx, a.warmup)
    timed(replay, ctx, a.warmup)
    info.update(pid=os.getpid(), python=sys.version.split()[0], warmup=a.warmup,
                eager_s=timed(eager, ctx, a.iters), graph_s=timed(replay, ctx, a.iters))
    with open(a.out, "w") as f:
        json.dump(info, f)
    time.sleep(0.5)
    print("done", flush=True)


if __name__ == "__main__":
    main()
