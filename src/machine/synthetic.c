/* PLACEHOLDER (helper replaces this file) */
#include "machine/machine_impl.h"
int nk_machine_load_synthetic(const char *desc, nk_machine **out, nk_error *err) { return nk__error(err, NK_ENOSYS, "synthetic: not yet"); }
