/* SPDX-License-Identifier: BSD-3-Clause
 * The hw sampler: precise memory sampling of another process with
 * perf_event_open (Intel PEBS load latency + stores, AMD IBS op), one event
 * per cpu following the process's threads and children (inherit), ring
 * buffers drained by the profiler's parent.  Decoding is in perf_decode.c;
 * system calls in src/os/linux_perf.c; the why of each choice in
 * docs/hw-sampling.md.
 */
#include "profile/hw_impl.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "os/os.h"
#include "util/list.h"
#include "util/error.h"

#define SYSFS_DEVICES "/sys/bus/event_source/devices"
#define NOPE "no precise memory sampling here"

struct hw_event {
	int fd;
	int kind;           /* NK__HW_EV_* */
	int cpu;
	void *map;          /* NULL for a counting group leader */
	size_t map_len;
	uint8_t *data;
	uint64_t data_size;
	struct nk__perf_layout lay;
	int dead;           /* abandoned after a corrupt record */
	int borrowed;       /* map belongs to the caller (nk__hw_from_rings) */
};

struct nk__hw {
	struct hw_event *ev;
	size_t n, cap;
	int16_t *cpu_node; /* by cpu id, -1 unknown */
	int n_cpu_node;
	struct nk__perf_stats st;
	char desc[256];
};

/* ------------------------------------------------------------ discovery */

static int read_trim(const char *root, const char *path, char **out)
{
	int rc = nk__os_read_file(root, path, out);
	if (!rc) {
		size_t n = strlen(*out);
		while (n && ((*out)[n - 1] == '\n' || (*out)[n - 1] == ' ' || (*out)[n - 1] == '\t'))
			(*out)[--n] = '\0';
	}
	return rc;
}

static int read_type(const char *root, const char *dev, uint32_t *type, nk_error *err)
{
	char path[256], *text = NULL, *end;
	unsigned long v;
	int rc;

	snprintf(path, sizeof path, SYSFS_DEVICES "/%s/type", dev);
	rc = read_trim(root, path, &text);
	if (rc == NK_ENOMEM)
		return rc;
	if (rc)
		return nk__error(err, NK_EPARSE, "%s: unreadable", path);
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end || v > UINT32_MAX) {
		free(text);
		return nk__error(err, NK_EPARSE, "%s: expected a PMU type number", path);
	}
	free(text);
	*type = (uint32_t)v;
	return 0;
}

/* Turn a parser's message into one naming the sysfs file; NK_EPARSE. */
static int prefix_path(nk_error *err, const char *path)
{
	char msg[NK_ERROR_MSG_MAX];

	if (!err)
		return NK_EPARSE;
	memcpy(msg, err->message, sizeof msg);
	msg[200] = '\0';
	return nk__error(err, NK_EPARSE, "%.280s: %.200s", path, msg);
}

static int load_formats(const char *root, const char *dev, struct nk__perf_pmu_format *pf, nk_error *err)
{
	char dir[256], path[512], **names = NULL, *text = NULL;
	size_t n = 0;
	int rc;

	memset(pf, 0, sizeof *pf);
	snprintf(dir, sizeof dir, SYSFS_DEVICES "/%s/format", dev);
	rc = nk__os_list_dir(root, dir, "", &names, &n);
	if (rc == NK_ENOENT)
		return 0; /* a PMU with no format directory: only terms-free events encode */
	if (rc)
		return rc == NK_ENOMEM ? rc : nk__error(err, NK_EPARSE, "%s: unreadable", dir);
	for (size_t i = 0; i < n && !rc; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		rc = nk__os_read_file(root, path, &text);
		if (rc) {
			if (rc != NK_ENOMEM)
				rc = nk__error(err, NK_EPARSE, "%s: unreadable", path);
			break;
		}
		rc = nk__perf_pmu_add_term(pf, names[i], text, strlen(text), err);
		if (rc)
			rc = prefix_path(err, path);
		free(text);
		text = NULL;
	}
	nk__os_free_names(names, n);
	return rc;
}

/* Encode events/@p event of @p dev: 1 done, 0 no such event, or an error. */
static int encode_event(const char *root, const char *dev, const struct nk__perf_pmu_format *pf, const char *event,
			const char *extra, uint64_t cfg[NK__PERF_NREGS], nk_error *err)
{
	char path[256], *text = NULL;
	int rc;

	snprintf(path, sizeof path, SYSFS_DEVICES "/%s/events/%s", dev, event);
	rc = read_trim(root, path, &text);
	if (rc == NK_ENOENT)
		return 0;
	if (rc)
		return rc == NK_ENOMEM ? rc : nk__error(err, NK_EPARSE, "%s: unreadable", path);
	rc = nk__perf_event_encode(pf, text, extra, cfg, err);
	free(text);
	if (rc)
		return prefix_path(err, path);
	if (cfg[3])
		return nk__error(err, NK_EPARSE, "%s: the event needs config3, which this build does not know", path);
	return 1;
}

static int has_term(const struct nk__perf_pmu_format *pf, const char *name)
{
	for (unsigned i = 0; i < pf->n; i++)
		if (!strcmp(pf->t[i].name, name))
			return 1;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int discover_intel(const char *root, unsigned ldlat, struct nk__hw_plan *plan, nk_error *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc = nk__os_list_dir(root, SYSFS_DEVICES, "cpu", &names, &n);

	if (rc == NK_ENOENT)
		return 0;
	if (rc)
		return rc == NK_ENOMEM ? rc : nk__error(err, NK_EIO, SYSFS_DEVICES ": unreadable");
	/* "cpu" sorts before "cpu_atom" and "cpu_core" */
	if (n)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = 0; i < n && !rc; i++) {
		struct nk__perf_pmu_format *pf;
		struct nk__hw_pmu *p;
		char path[256], extra[32], *cpus = NULL;

		if (strcmp(names[i], "cpu") && strncmp(names[i], "cpu_", 4))
			continue;
		snprintf(path, sizeof path, SYSFS_DEVICES "/%s/events/mem-loads", names[i]);
		if (!nk__os_exists(root, path) || plan->n_pmu == sizeof plan->pmu / sizeof *plan->pmu ||
		    strlen(names[i]) >= sizeof p->name)
			continue;
		pf = malloc(sizeof *pf);
		if (!pf) {
			rc = NK_ENOMEM;
			break;
		}
		p = &plan->pmu[plan->n_pmu];
		memset(p, 0, sizeof *p);
		strcpy(p->name, names[i]);
		rc = read_type(root, names[i], &p->type, err);
		if (!rc)
			rc = load_formats(root, names[i], pf, err);
		snprintf(extra, sizeof extra, "ldlat=%u", ldlat);
		if (!rc) {
			const char *ld = has_term(pf, "ldlat") ? extra : NULL;
			rc = encode_event(root, names[i], pf, "mem-loads", ld, p->load, err);
			rc = rc == 1 ? 0 : rc ? rc : NK_EPARSE;
		}
		if (!rc) {
			rc = encode_event(root, names[i], pf, "mem-stores", NULL, p->store, err);
			p->has_store = rc == 1;
			rc = rc < 0 ? rc : 0;
		}
		if (!rc) {
			rc = encode_event(root, names[i], pf, "mem-loads-aux", NULL, p->aux, err);
			p->has_aux = rc == 1;
			rc = rc < 0 ? rc : 0;
		}
		if (!rc) { /* hybrid PMUs cover some cpus only */
			snprintf(path, sizeof path, SYSFS_DEVICES "/%s/cpus", names[i]);
			int r = read_trim(root, path, &cpus);
			if (r == NK_ENOMEM)
				rc = r;
			else if (!r && nk__parse_list(cpus, &p->cpus, NULL, 0))
				rc = nk__error(err, NK_EPARSE, "%s: not a cpu list", path);
			free(cpus);
		}
		free(pf);
		if (rc)
			nk__ilist_free(&p->cpus);
		else
			plan->n_pmu++;
	}
	nk__os_free_names(names, n);
	if (!rc && plan->n_pmu)
		plan->vendor = NK__HW_INTEL;
	return rc;
}

static int discover_amd(const char *root, struct nk__hw_plan *plan, nk_error *err)
{
	struct nk__perf_pmu_format *pf;
	int rc;

	if (!nk__os_exists(root, SYSFS_DEVICES "/ibs_op/type"))
		return 0;
	pf = malloc(sizeof *pf);
	if (!pf)
		return NK_ENOMEM;
	rc = read_type(root, "ibs_op", &plan->ibs_type, err);
	if (!rc)
		rc = load_formats(root, "ibs_op", pf, err);
	if (!rc) {
		/* count dispatched ops, not cycles: every op has the same chance to be tagged */
		memset(plan->ibs, 0, sizeof plan->ibs);
		if (has_term(pf, "cnt_ctl"))
			rc = nk__perf_event_encode(pf, "cnt_ctl=1", NULL, plan->ibs, err);
		plan->ibs_l3missonly = has_term(pf, "l3missonly");
	}
	free(pf);
	if (!rc)
		plan->vendor = NK__HW_AMD;
	return rc;
}

void nk__hw_plan_free(struct nk__hw_plan *plan)
{
	if (!plan)
		return;
	for (unsigned i = 0; i < plan->n_pmu; i++)
		nk__ilist_free(&plan->pmu[i].cpus);
	plan->n_pmu = 0;
}

int nk__hw_discover(const char *fsroot, unsigned ldlat, struct nk__hw_plan *plan, nk_error *err)
{
	struct nk__hw_plan p;
	int rc;

	memset(&p, 0, sizeof p);
	rc = discover_intel(fsroot, ldlat, &p, err);
	if (!rc && !p.vendor)
		rc = discover_amd(fsroot, &p, err);
	if (!rc && !p.vendor)
		rc = nk__error(err, NK_ENOSYS,
			       NOPE ": no mem-loads event in " SYSFS_DEVICES "/cpu/events (not an Intel CPU with PEBS "
				    "load latency) and no ibs_op PMU (not AMD IBS)");
	if (rc) {
		nk__hw_plan_free(&p);
		return rc;
	}
	*plan = p;
	return 0;
}

/* ------------------------------------------------------------ attributes */

void nk__hw_attr(const struct nk__hw_plan *plan, unsigned pmu, int ev, double rate, int precise, int weight_struct,
		 struct perf_event_attr *attr)
{
	const uint64_t *cfg;

	memset(attr, 0, sizeof *attr);
	attr->size = sizeof *attr;
	if (ev == NK__HW_EV_IBS) {
		attr->type = plan->ibs_type;
		cfg = plan->ibs;
		attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
				    PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
		attr->precise_ip = 0; /* the ibs_op PMU itself is precise; precise_ip is for the cycles alias */
	} else {
		attr->type = plan->pmu[pmu].type;
		cfg = ev == NK__HW_EV_LOAD ? plan->pmu[pmu].load : ev == NK__HW_EV_STORE ? plan->pmu[pmu].store
											  : plan->pmu[pmu].aux;
		attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
				    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC |
				    (weight_struct ? NK__PERF_SAMPLE_WEIGHT_STRUCT : PERF_SAMPLE_WEIGHT);
		attr->precise_ip = (unsigned)precise & 3;
	}
	attr->config = cfg[0];
	attr->config1 = cfg[1];
	attr->config2 = cfg[2];
	if (ev == NK__HW_EV_AUX) {
		/* a counting leader: mem-loads samples, the leader only satisfies the kernel's grouping rule */
		attr->sample_type = 0;
		attr->precise_ip = 0;
	} else if (rate > 0) {
		uint64_t period = rate >= 1e18 ? (uint64_t)1e18 : rate < 1 ? 1 : (uint64_t)rate;
		if (ev == NK__HW_EV_IBS) /* IbsOpMaxCnt counts in 16s; kernels refuse less than 0x90 ops */
			period = period < 0x90 ? 0x90 : period & ~(uint64_t)0xf;
		attr->sample_period = period;
	} else {
		attr->freq = 1;
		attr->sample_freq = NK__HW_DEFAULT_FREQ;
	}
	attr->disabled = 1;
	attr->enable_on_exec = 1;
	attr->inherit = 1;
	attr->exclude_kernel = 1; /* the program's own accesses; also what perf_event_paranoid 2 allows */
	attr->exclude_hv = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC; /* the runtime's clock: samples merge into its time line */
	attr->wakeup_events = 64;
}

/* ------------------------------------------------------------ open */

static const char *ev_name(int ev)
{
	switch (ev) {
	case NK__HW_EV_LOAD: return "mem-loads";
	case NK__HW_EV_STORE: return "mem-stores";
	case NK__HW_EV_AUX: return "mem-loads-aux";
	default: return "ibs_op";
	}
}

int nk__hw_open_error(const char *root, int ev, int cpu, int e, nk_error *err)
{
	const char *what = ev_name(ev);

	switch (e) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return nk__error(err, NK_ENOSYS,
				 NOPE ": perf_event_open(%s) failed: %s (this machine or VM exposes no hardware PMU)",
				 what, strerror(e));
	case EACCES:
	case EPERM: {
		char *p = NULL, *end = NULL;
		int rc = read_trim(root, "/proc/sys/kernel/perf_event_paranoid", &p);
		long level = rc ? 99 : strtol(p, &end, 10);

		if (!rc && end != p && *end == '\0' && level <= 1) /* not the paranoia: a seccomp filter, an LSM */
			rc = nk__error(err, NK_ENOSYS,
				       NOPE ": perf_event_open(%s) failed: %s although perf_event_paranoid is %ld (a "
					    "seccomp filter or security module of this container or system denies it)",
				       what, strerror(e), level);
		else
			rc = nk__error(err, NK_ENOSYS,
				       NOPE ": perf_event_open(%s) failed: %s: perf_event_paranoid is %s; run as root "
					    "or set it to 1 or lower",
				       what, strerror(e), rc ? "unknown" : p);
		free(p);
		return rc;
	}
	case EMFILE:
	case ENFILE:
		return nk__error(err, NK_ENOSYS,
				 NOPE ": perf_event_open(%s) on cpu %d failed: %s (one event per cpu is needed; raise "
				      "the open-file limit)",
				 what, cpu, strerror(e));
	case EINVAL:
		return nk__error(err, NK_ENOSYS,
				 NOPE ": perf_event_open(%s) on cpu %d failed: %s (the kernel refused the event's "
				      "settings: precise_ip, sample_type or clock)",
				 what, cpu, strerror(e));
	default:
		return nk__error(err, NK_ENOSYS, NOPE ": perf_event_open(%s) on cpu %d failed: %s", what, cpu,
				 strerror(e));
	}
}

static void close_event(struct hw_event *e)
{
	if (!e->borrowed)
		nk__os_perf_munmap(e->map, e->map_len, NULL);
	nk__os_perf_close(e->fd, NULL);
}

void nk__hw_close(struct nk__hw *h)
{
	if (!h)
		return;
	/* members before their leaders: close in reverse order of opening */
	for (size_t i = h->n; i-- > 0;)
		close_event(&h->ev[i]);
	free(h->ev);
	free(h->cpu_node);
	free(h);
}

static int push_event(struct nk__hw *h, const struct hw_event *e)
{
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 16;
		struct hw_event *nv = realloc(h->ev, ncap * sizeof *nv);
		if (!nv)
			return NK_ENOMEM;
		h->ev = nv;
		h->cap = ncap;
	}
	h->ev[h->n++] = *e;
	return 0;
}

/* Where the data area of a mapping of @p len bytes lies. */
static void set_ring(struct hw_event *e, void *p, size_t len)
{
	const struct perf_event_mmap_page *meta = p;
	unsigned long page = nk__os_page_size();
	size_t pages = len / page - 1;

	e->map = p;
	e->map_len = len;
	/* data_offset/data_size exist since Linux 4.1; before, the data follows the first page */
	if (meta->data_size && meta->data_offset <= len && meta->data_size <= len - meta->data_offset) {
		e->data = (uint8_t *)p + meta->data_offset;
		e->data_size = meta->data_size;
	} else {
		e->data = (uint8_t *)p + page;
		e->data_size = pages * page;
	}
}

static int map_ring(struct hw_event *ev, nk_error *err)
{
	unsigned long page = nk__os_page_size();
	int rc, e = ENOMEM;

	/* unprivileged users share perf_event_mlock_kb: smaller rings rather than none */
	for (size_t pages = NK__HW_RING_PAGES; pages >= NK__HW_MIN_PAGES; pages /= 2) {
		size_t len = (pages + 1) * page;
		void *p;

		rc = nk__os_perf_mmap(ev->fd, len, &p, &e);
		if (!rc) {
			set_ring(ev, p, len);
			return 0;
		}
		if (e != EPERM && e != ENOMEM)
			break;
	}
	return nk__error(err, NK_ENOSYS, NOPE ": mapping the perf ring buffer failed: %s (see perf_event_mlock_kb)",
			 strerror(e));
}

/*
 * Open event @p ev of pmu @p pmu on every cpu of @p cpus.  The first cpu
 * settles precise_ip and the weight format (IBS: whether exclude_kernel is
 * accepted): newer settings first, older ones when the kernel says EINVAL.
 */
static int open_kind(struct nk__hw *h, const char *root, const struct nk__hw_plan *plan, unsigned pmu, int ev,
		     int pid, double rate, const nk__ilist *cpus, nk_error *err)
{
	static const int ladder[][2] = { { 2, 1 }, { 2, 0 }, { 1, 1 }, { 1, 0 } };
	/* IBS: older kernels refuse exclude_kernel/exclude_hv on ibs_op (EINVAL); kernel samples are harmless */
	size_t steps = ev == NK__HW_EV_IBS ? 2 : sizeof ladder / sizeof *ladder;
	size_t step = 0;
	int has_aux = ev == NK__HW_EV_LOAD && plan->pmu[pmu].has_aux;

	for (size_t i = 0; i < cpus->n; i++) {
		struct perf_event_attr attr;
		struct hw_event e = { .fd = -1, .kind = ev, .cpu = cpus->v[i] };
		int leader = -1, fd, rc, e_open = 0;

		if (has_aux) {
			struct hw_event a = { .fd = -1, .kind = NK__HW_EV_AUX, .cpu = cpus->v[i] };
			nk__hw_attr(plan, pmu, NK__HW_EV_AUX, rate, 0, 0, &attr);
			leader = nk__os_perf_open(&attr, pid, cpus->v[i], -1, 0, &e_open);
			if (leader < 0)
				return nk__hw_open_error(root, NK__HW_EV_AUX, cpus->v[i], e_open, err);
			a.fd = leader;
			rc = push_event(h, &a);
			if (rc) {
				nk__os_perf_close(leader, NULL);
				return rc;
			}
		}
		for (;;) {
			nk__hw_attr(plan, pmu, ev, rate, ladder[step][0], ladder[step][1], &attr);
			if (ev == NK__HW_EV_IBS) {
				attr.precise_ip = 0;
				attr.exclude_kernel = attr.exclude_hv = step == 0;
			}
			if (leader >= 0) { /* the leader enables the group */
				attr.disabled = 0;
				attr.enable_on_exec = 0;
			}
			fd = nk__os_perf_open(&attr, pid, cpus->v[i], leader, 0, &e_open);
			if (fd >= 0 || e_open != EINVAL || i > 0 || step + 1 >= steps)
				break;
			step++;
		}
		if (fd < 0)
			return nk__hw_open_error(root, ev, cpus->v[i], e_open, err);
		e.fd = fd;
		e.lay.sample_type = attr.sample_type;
		e.lay.kind = ev == NK__HW_EV_IBS ? NK__PERF_IBS_OP : ev == NK__HW_EV_STORE ? NK__PERF_PEBS_STORE
											 : NK__PERF_PEBS_LOAD;
		rc = map_ring(&e, err);
		if (!rc)
			rc = push_event(h, &e);
		if (rc) {
			close_event(&e);
			return rc;
		}
	}
	return 0;
}

/* h->cpu_node from the machine model. */
static int cpu_nodes(struct nk__hw *h, const nk_machine *m)
{
	int max_cpu = -1;

	for (int i = 0; i < nk_machine_num_cpus(m); i++)
		if (nk_machine_cpu_id(m, i) > max_cpu)
			max_cpu = nk_machine_cpu_id(m, i);
	h->cpu_node = malloc((size_t)(max_cpu + 1) * sizeof *h->cpu_node + 1);
	if (!h->cpu_node)
		return NK_ENOMEM;
	h->n_cpu_node = max_cpu + 1;
	for (int c = 0; c <= max_cpu; c++) {
		nk_cpu_info ci;
		h->cpu_node[c] = (int16_t)(nk_machine_cpu_info(m, c, &ci) || ci.node < 0 ? -1 : ci.node);
	}
	return 0;
}

int nk__hw_from_rings(void *const *maps, const size_t *lens, const struct nk__perf_layout *lays, size_t n,
		      const nk_machine *m, struct nk__hw **out)
{
	struct nk__hw *h = calloc(1, sizeof *h);
	int rc = h ? 0 : NK_ENOMEM;

	if (!rc && m)
		rc = cpu_nodes(h, m);
	for (size_t i = 0; i < n && !rc; i++) {
		struct hw_event e = { .fd = -1, .kind = NK__HW_EV_LOAD, .cpu = -1, .lay = lays[i], .borrowed = 1 };
		set_ring(&e, maps[i], lens[i]);
		rc = push_event(h, &e);
	}
	if (rc) {
		nk__hw_close(h);
		return rc;
	}
	snprintf(h->desc, sizeof h->desc, "%zu ring buffers", n);
	*out = h;
	return 0;
}

/* The machine's cpus, restricted to @p only when it is not empty. */
static int machine_cpus(const nk_machine *m, const nk__ilist *only, nk__ilist *out)
{
	int n = nk_machine_num_cpus(m);
	for (int i = 0; i < n; i++) {
		int c = nk_machine_cpu_id(m, i);
		if (c < 0 || (only->n && !nk__ilist_contains(only, c)))
			continue;
		if (nk__ilist_push(out, c))
			return NK_ENOMEM;
	}
	return 0;
}

int nk__hw_open_at(const char *fsroot, int pid, const nk_machine *m, double rate, struct nk__hw **out,
		   nk_error *err)
{
	struct nk__hw_plan plan;
	struct nk__hw *h = NULL;
	nk__ilist cpus = { 0 };
	int rc, ncpu = 0;

	if (pid <= 0 || !m || !out || !(rate >= 0))
		return nk__error(err, NK_EINVAL, "nk__hw_open: bad argument");
	rc = nk__hw_discover(fsroot, NK__HW_LDLAT, &plan, err);
	if (rc)
		return rc;
	h = calloc(1, sizeof *h);
	if (!h) {
		rc = NK_ENOMEM;
		goto out_plan;
	}
	rc = cpu_nodes(h, m);
	if (rc)
		goto out_close;
	if (plan.vendor == NK__HW_AMD) {
		const nk__ilist all = { 0 };
		rc = machine_cpus(m, &all, &cpus);
		if (!rc)
			rc = open_kind(h, fsroot, &plan, 0, NK__HW_EV_IBS, pid, rate, &cpus, err);
		ncpu = (int)cpus.n;
		snprintf(h->desc, sizeof h->desc, "AMD IBS op: ibs_op/cnt_ctl=1/ on %d cpus", ncpu);
	} else {
		int len = snprintf(h->desc, sizeof h->desc, "Intel PEBS:");
		for (unsigned p = 0; p < plan.n_pmu && !rc; p++) {
			cpus.n = 0;
			rc = machine_cpus(m, &plan.pmu[p].cpus, &cpus);
			if (!rc && cpus.n == 0)
				continue;
			if (!rc)
				rc = open_kind(h, fsroot, &plan, p, NK__HW_EV_LOAD, pid, rate, &cpus, err);
			if (!rc && plan.pmu[p].has_store)
				rc = open_kind(h, fsroot, &plan, p, NK__HW_EV_STORE, pid, rate, &cpus, err);
			ncpu += (int)cpus.n;
			if (len >= 0 && (size_t)len < sizeof h->desc)
				len += snprintf(h->desc + len, sizeof h->desc - (size_t)len,
						"%s %s/mem-loads,ldlat=%d/P%s%s%s",
						p ? " +" : "", plan.pmu[p].name, NK__HW_LDLAT,
						plan.pmu[p].has_store ? " + " : "",
						plan.pmu[p].has_store ? plan.pmu[p].name : "",
						plan.pmu[p].has_store ? "/mem-stores/P" : "");
		}
		if (!rc && len >= 0 && (size_t)len < sizeof h->desc)
			snprintf(h->desc + len, sizeof h->desc - (size_t)len, " on %d cpus", ncpu);
	}
	if (!rc && h->n == 0)
		rc = nk__error(err, NK_ENOSYS, NOPE ": the PMUs with memory events cover none of the machine's cpus");
	if (rc)
		goto out_close;
	*out = h;
	h = NULL;
out_close:
	nk__hw_close(h);
out_plan:
	nk__ilist_free(&cpus);
	nk__hw_plan_free(&plan);
	return rc;
}

int nk__hw_open(int pid, const nk_machine *m, double rate, struct nk__hw **out, nk_error *err)
{
	return nk__hw_open_at("/", pid, m, rate, out, err);
}

const char *nk__hw_describe(const struct nk__hw *h)
{
	return h ? h->desc : "";
}

void nk__hw_stats(const struct nk__hw *h, struct nk__perf_stats *st)
{
	*st = h->st;
}

/* ------------------------------------------------------------ drain */

struct emit_ctx {
	struct nk__hw_samples *out;
	const struct nk__hw *h;
};

static int emit(void *ctx, const struct nk__nkp_sample *s, uint32_t pid)
{
	struct emit_ctx *c = ctx;
	struct nk__hw_samples *o = c->out;

	if (o->n == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 1024;
		struct nk__nkp_sample *ns = realloc(o->s, ncap * sizeof *ns);
		uint32_t *np;

		if (!ns)
			return NK_ENOMEM;
		o->s = ns;
		np = realloc(o->pid, ncap * sizeof *np);
		if (!np)
			return NK_ENOMEM;
		o->pid = np;
		o->cap = ncap;
	}
	o->s[o->n] = *s;
	if (s->cpu >= 0 && s->cpu < c->h->n_cpu_node)
		o->s[o->n].cpu_node = c->h->cpu_node[s->cpu];
	o->pid[o->n] = pid;
	o->n++;
	return 0;
}

int nk__hw_drain(struct nk__hw *h, struct nk__hw_samples *out, nk_error *err)
{
	struct emit_ctx ctx = { out, h };

	for (size_t i = 0; i < h->n; i++) {
		struct hw_event *e = &h->ev[i];
		struct perf_event_mmap_page *meta = e->map;
		uint64_t head, tail, lost0 = h->st.lost;
		int rc;

		if (!meta || e->dead)
			continue;
		/* data_head: acquire pairs with the kernel's write barrier before it publishes records */
		head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		tail = meta->data_tail;
		rc = nk__perf_ring_decode(e->data, e->data_size, &tail, head, &e->lay, emit, &ctx, &h->st);
		/* data_tail: release, so our reads of the records finish before the kernel may overwrite them */
		__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
		out->lost += h->st.lost - lost0;
		if (rc == NK_EPARSE)
			e->dead = 1;
		else if (rc)
			return nk__error(err, rc, "hw sampler: no memory for %zu samples", out->n + 1);
	}
	return 0;
}

void nk__hw_samples_free(struct nk__hw_samples *out)
{
	if (!out)
		return;
	free(out->s);
	free(out->pid);
	memset(out, 0, sizeof *out);
}
