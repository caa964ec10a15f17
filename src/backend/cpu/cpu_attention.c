/* cpu_attention.c: placeholder until the kernels land (entries stay NULL; ops report unsupported). */
#include "backend/cpu/cpu.h"

void tb_cpu_register_attention(tb_backend_ops *ops)
{
    (void)ops;
}
