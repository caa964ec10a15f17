/* cpu.h: internal to the CPU backend. Each kernel group registers its entries in the ops table. */
#ifndef TRAINBENCH_CPU_H
#define TRAINBENCH_CPU_H

#include "backend/backend_impl.h"

void tb_cpu_register_dense(tb_backend_ops *ops);     /* cpu_dense.c: BLAS, element-wise */
void tb_cpu_register_loss(tb_backend_ops *ops);      /* cpu_loss.c: losses, dropout */
void tb_cpu_register_conv(tb_backend_ops *ops);      /* cpu_conv.c: conv2d, pooling */
void tb_cpu_register_norm(tb_backend_ops *ops);      /* cpu_norm.c: batch norm, layer norm */
void tb_cpu_register_attention(tb_backend_ops *ops); /* cpu_attention.c: attention, embedding */
void tb_cpu_register_optim(tb_backend_ops *ops);     /* cpu_optim.c: optimizer updates */

#endif
