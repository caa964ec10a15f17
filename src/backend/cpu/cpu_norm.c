/* cpu_norm.c: placeholder until the kernels land (entries stay NULL; ops report unsupported). */
#include "backend/cpu/cpu.h"

void tb_cpu_register_norm(tb_backend_ops *ops)
{
    (void)ops;
}
