/* PLACEHOLDER (helper replaces this file) */
#include "machine/machine_impl.h"
int nk_machine_load_file(const char *path, nk_machine **out, nk_error *err) { return nk__error(err, NK_ENOSYS, "file: not yet"); }
int nk_machine_load_buffer(const char *buf, size_t len, nk_machine **out, nk_error *err) { return nk__error(err, NK_ENOSYS, "file: not yet"); }
int nk_machine_to_json(const nk_machine *m, unsigned flags, char **out) { return NK_ENOSYS; }
int nk_machine_save(const nk_machine *m, const char *path, nk_error *err) { return NK_ENOSYS; }
