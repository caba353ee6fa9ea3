/* Not valid OpenMP: an unknown schedule kind (only the -fopenmp parse sees it). */
int main(void)
{
	int a[4];
#pragma omp parallel for schedule(bogus)
	for (int i = 0; i < 4; i++)
		a[i] = i;
	return a[0];
}
