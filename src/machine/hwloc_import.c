/* PLACEHOLDER (helper replaces this file) */
#include "machine/machine_impl.h"
int nk_machine_load_xml(const char *path, nk_machine **out, nk_error *err) { return nk__error(err, NK_ENOSYS, "xml: not yet"); }
