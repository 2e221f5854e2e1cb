"""train_step: a small model's training step (forward, backward, optimizer
step), timed per step, for bench/gpu/run.sh.

  python3 train_step.py --out FILE [--steps N] [--warmup W]          (PyTorch, cuda)
  python3 train_step.py --dry LIBCUDART --out FILE [--steps N] ...   (stand-in)

The lines whose CUDA calls run.sh checks carry a "# MARK MODE ROLE" comment
(MODE gpu or dry; ROLE forward, backward, backward-thread): run.sh reads
them from this file, so lines can move. On the GPU the autograd engine runs
the backward pass on its own thread: Scale.backward's Python line runs
there (its own frames), and the kernels libtorch launches there from C++
are attributed to the main thread waiting in loss.backward()
(docs/python.md, "Threads without Python frames"). The dry run has no
torch: the same shape through the stand-in libcudart (ctypes), one
long-lived Python thread for the backward pass while the main thread waits.

Writes one JSON object to --out: per-step seconds after the warm-up."""
import argparse
import ctypes
import json
import os
import queue
import sys
import threading
import time


# ---- PyTorch on cuda -------------------------------------------------------

def gpu_setup():
    import torch

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0  # MARK gpu forward

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0  # MARK gpu backward-thread

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(1024, 4096)
            self.fc2 = torch.nn.Linear(4096, 1024)

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randn(256, 1024, device=dev)
    return torch, Scale, model, opt, x, y


def gpu_forward(torch, Scale, model, x, y):
    h = torch.relu(model.fc1(x))  # MARK gpu forward
    h = Scale.apply(h)
    out = model.fc2(h)  # MARK gpu forward
    return torch.nn.functional.mse_loss(out, y)  # MARK gpu forward


def gpu_backward(loss):
    loss.backward()  # MARK gpu backward


def gpu_step(ctx):
    torch, Scale, model, opt, x, y = ctx
    opt.zero_grad(set_to_none=True)
    loss = gpu_forward(torch, Scale, model, x, y)
    gpu_backward(loss)
    opt.step()
    return loss.item()  # a device-to-host copy: the step's end


def gpu_info(ctx):
    torch = ctx[0]
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0)}


# ---- the stand-in libcudart (dry run) --------------------------------------

class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


DRY_KERNELS = ("cw_dry_gemm_fwd", "cw_dry_relu_fwd", "cw_dry_scale_fwd", "cw_dry_mse_fwd",
               "cw_dry_gemm_bwd", "cw_dry_scale_bwd", "cw_dry_sgd_step")


def dry_setup(lib):
    rt = ctypes.CDLL(lib)
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                   ctypes.c_int, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    # Host stubs: one distinct address per kernel, registered by name as
    # nvcc's registration constructors do.
    stubs = {}
    for name in DRY_KERNELS:
        stub = ctypes.create_string_buffer(16)
        cname = ctypes.create_string_buffer(name.encode())
        rt.__cudaRegisterFunction(None, stub, cname, cname, -1, None, None, None, None, None)
        stubs[name] = (stub, cname)
    k = {n: ctypes.cast(s[0], ctypes.c_void_p) for n, s in stubs.items()}
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(64 << 20))
    host = ctypes.create_string_buffer(4096)
    g, b, work, done = Dim3(256, 1, 1), Dim3(128, 1, 1), queue.Queue(), queue.Queue()
    threading.Thread(target=dry_backward_thread, args=(rt, k, g, b, work, done),
                     name="autograd", daemon=True).start()
    # trace learns a process's new Python threads every 100 ms
    # (docs/python.md, "Limits"); PyTorch's engine thread likewise starts
    # at the first backward pass and lives on.
    time.sleep(0.3)
    return rt, k, g, b, host, stubs, work, done


def dry_forward(rt, k, g, b):
    rt.cudaLaunchKernel(k["cw_dry_gemm_fwd"], g, b, None, 0, None)  # MARK dry forward
    rt.cudaLaunchKernel(k["cw_dry_relu_fwd"], g, b, None, 0, None)  # MARK dry forward
    rt.cudaLaunchKernel(k["cw_dry_scale_fwd"], g, b, None, 0, None)  # MARK dry forward
    rt.cudaLaunchKernel(k["cw_dry_mse_fwd"], g, b, None, 0, None)  # MARK dry forward


def dry_backward_thread(rt, k, g, b, work, done):
    # One long-lived thread, as PyTorch's autograd engine keeps one per device.
    while work.get():
        for _ in range(2):
            rt.cudaLaunchKernel(k["cw_dry_scale_bwd"], g, b, None, 0, None)  # MARK dry backward-thread
            rt.cudaLaunchKernel(k["cw_dry_gemm_bwd"], g, b, None, 0, None)  # MARK dry backward-thread
        done.put(True)


def dry_backward(ctx):
    ctx[6].put(True)
    return ctx[7].get()  # MARK dry backward


def dry_step(ctx):
    rt, k, g, b, host = ctx[:5]
    dry_forward(rt, k, g, b)
    dry_backward(ctx)
    rt.cudaLaunchKernel(k["cw_dry_sgd_step"], g, b, None, 0, None)
    rt.cudaMemcpyAsync(host, host, 4, 2, None)
    return rt.cudaStreamSynchronize(None)


# ---- timing ----------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dry", metavar="LIBCUDART")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.dry:
        ctx, step, info = dry_setup(a.dry), dry_step, {"mode": "dry", "lib": a.dry}
    else:
        ctx = gpu_setup()
        step, info = gpu_step, dict(mode="gpu", **gpu_info(ctx))
    for _ in range(a.warmup):
        step(ctx)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step(ctx)
        times.append(time.perf_counter() - t0)
    info.update(pid=os.getpid(), python=sys.version.split()[0], warmup=a.warmup, step_s=times)
    with open(a.out, "w") as f:
        json.dump(info, f)
    # Outlive the last calls a little: their stacks are named from this
    # process's memory (docs/python.md).
    time.sleep(0.5)
    print("done", flush=True)


if __name__ == "__main__":
    main()
