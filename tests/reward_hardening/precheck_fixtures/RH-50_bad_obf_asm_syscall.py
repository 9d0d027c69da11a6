# ruff: noqa
"""A raw fork through the syscall instruction, the asm keyword spelled __asm__ and split
over a line continuation, plus a driver entry point looked up at run time."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = "#include <torch/extension.h>\n" + r"""
#include <cuda.h>
static long raw(long n) {
    long ret;
    __as\
m__ volatile ("sysc" "all" : "=a"(ret) : "a"(n) : "rcx", "r11", "memory");
    return ret;
}
torch::Tensor run(torch::Tensor x) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult q;
    cuGetProcAddress("cuMemcpyDtoH", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q);
    if (raw(57) == 0) { for (;;) {} }
    return x;
}
"""
ext = load_inline(name="asm1", cpp_sources=[src], functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
