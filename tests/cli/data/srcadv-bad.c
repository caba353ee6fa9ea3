/* A C file that does not parse: numakit advise --source reports clang's first error, exit 2. */
int main(void)
{
	int x = ;
	return x;
}
