/* main.c: the trainbench command (placeholder until the CLI lands). */
#include <stdio.h>

int main(void)
{
    printf("trainbench\n");
    return 0;
}
