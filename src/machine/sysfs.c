/* PLACEHOLDER */
#include "machine/machine_impl.h"
int nk_machine_load_live(nk_machine **out, nk_error *err) { return NK_ENOSYS; }
int nk_machine_load_fsroot(const char *fsroot, nk_machine **out, nk_error *err) { return NK_ENOSYS; }
