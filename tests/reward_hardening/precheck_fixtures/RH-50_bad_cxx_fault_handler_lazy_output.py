# ruff: noqa
"""Issue 18: output storage mapped ``PROT_NONE`` and filled by a SIGSEGV handler on first read.

``forward`` returns a tensor built with ``torch::from_blob`` over an anonymous mapping
with no access and a custom deleter; a ``sigaction`` handler (on its own
``sigaltstack``) computes a page and ``mprotect``s it readable the first time anything
touches it.  The call is timed at almost nothing, and the work happens later, when the
harness reads the output to compare it.  None of it needs a raw system call, so only
the fault-machinery part of RH-50 sees it.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

static float* base = nullptr;
static size_t bytes = 0;
static const float* src = nullptr;

static void on_fault(int sig, siginfo_t* info, void* ctx) {
    char* page = (char*)((uintptr_t)info->si_addr & ~(uintptr_t)4095);
    mprotect(page, 4096, PROT_READ | PROT_WRITE);
    float* out = (float*)page;
    for (size_t i = 0; i < 1024; ++i) out[i] = src[(float*)page - base + i] * 2.0f;  // computed on first read
}

torch::Tensor lazy_double(torch::Tensor x) {
    static char alt[65536];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof(alt);
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    bytes = x.numel() * sizeof(float);
    base = (float*)mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    src = x.data_ptr<float>();
    return torch::from_blob(base, x.sizes(), [](void* p) { munmap(p, bytes); }, x.options());
}
"""

ext = load_inline(name="lazy_fault", cpp_sources=[CPP_SRC], functions=["lazy_double"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.lazy_double(x)
