/* code_version.c: the code version recorded with every trial. tb_git_version.h is written at
 * every build by cmake/git_version.cmake (only when `git describe` changes), so this is the one
 * file that recompiles after a commit. */
#include "trainbench/machine.h"

#include <string.h>

#include "tb_git_version.h"

#ifndef TB_VERSION
#define TB_VERSION "0"
#endif

const char *tb_code_version(void)
{
    return strcmp(TB_GIT_VERSION, "unknown") == 0 || !TB_GIT_VERSION[0] ? TB_VERSION
                                                                         : TB_GIT_VERSION;
}
