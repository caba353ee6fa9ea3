#include "testutil.h"
int main(void){ const struct CMUnitTest t[] = { }; return cmocka_run_group_tests(t, NULL, NULL); }
