# ruff: noqa
"""Raw system calls from the extension: process_vm_readv on the parent and a setsid daemon."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = r"""
#include <torch/extension.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/uio.h>
torch::Tensor run(torch::Tensor x) {
    char buf[64];
    struct iovec local = {buf, sizeof buf}, remote = {(void*)0x400000, sizeof buf};
    syscall(SYS_process_vm_readv, getppid(), &local, 1, &remote, 1, 0);
    long r = syscall(__NR_setsid);
    return x;
}
"""
ext = load_inline(name="sc", cpp_sources=cpp, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
