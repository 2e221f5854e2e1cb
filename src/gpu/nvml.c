/* dlopen'ed NVML (see nvml.h and nvml_api.h). Entry points other than
 * init, count and handle are optional: a missing one (older driver, a
 * minimal shim) leaves its readings at -1. */
#define _GNU_SOURCE
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nvml_api.h"

struct cw_nvml {
	void *h;
	char path[256];
	char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	int ndev;
	nvmlDevice_t dev[CW_GPU_MAX];
	struct cw_gpu_device info[CW_GPU_MAX];
	unsigned long long util_ts[CW_GPU_MAX]; /* last process-utilization timestamp */
	nvmlEventSet_t evset;

	nvmlReturn_t (*Init_v2)(void);
	nvmlReturn_t (*Shutdown)(void);
	const char *(*ErrorString)(nvmlReturn_t);
	nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned int);
	nvmlReturn_t (*DeviceGetCount_v2)(unsigned int *);
	nvmlReturn_t (*DeviceGetHandleByIndex_v2)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*DeviceGetPciInfo_v3)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*DeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*DeviceGetCurrentClocksEventReasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceGetCurrentClocksThrottleReasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*DeviceGetRetiredPages)(nvmlDevice_t, int, unsigned int *, unsigned long long *);
	nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
					      unsigned int *);
	nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*DeviceGetNvLinkErrorCounter)(nvmlDevice_t, unsigned int, int, unsigned long long *);
	nvmlReturn_t (*DeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
	nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
						    unsigned long long);
	nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t *);
	nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
	nvmlReturn_t (*DeviceGetSupportedEventTypes)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*EventSetWait_v2)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
};

#define SYM(n, name) (*(void **)&(n)->name = dlsym((n)->h, "nvml" #name))

static void resolve(struct cw_nvml *n)
{
	SYM(n, Init_v2);
	SYM(n, Shutdown);
	SYM(n, ErrorString);
	SYM(n, SystemGetDriverVersion);
	SYM(n, DeviceGetCount_v2);
	SYM(n, DeviceGetHandleByIndex_v2);
	SYM(n, DeviceGetUUID);
	SYM(n, DeviceGetName);
	SYM(n, DeviceGetPciInfo_v3);
	SYM(n, DeviceGetUtilizationRates);
	SYM(n, DeviceGetMemoryInfo);
	SYM(n, DeviceGetMemoryInfo_v2);
	SYM(n, DeviceGetTemperature);
	SYM(n, DeviceGetFieldValues);
	SYM(n, DeviceGetPowerUsage);
	SYM(n, DeviceGetEnforcedPowerLimit);
	SYM(n, DeviceGetTotalEnergyConsumption);
	SYM(n, DeviceGetClockInfo);
	SYM(n, DeviceGetMaxClockInfo);
	SYM(n, DeviceGetCurrentClocksEventReasons);
	SYM(n, DeviceGetCurrentClocksThrottleReasons);
	SYM(n, DeviceGetTotalEccErrors);
	SYM(n, DeviceGetPcieReplayCounter);
	SYM(n, DeviceGetRetiredPages);
	SYM(n, DeviceGetRemappedRows);
	SYM(n, DeviceGetNvLinkState);
	SYM(n, DeviceGetNvLinkErrorCounter);
	SYM(n, DeviceGetComputeRunningProcesses_v3);
	SYM(n, DeviceGetProcessUtilization);
	SYM(n, DeviceGetMigMode);
	SYM(n, DeviceGetMaxMigDeviceCount);
	SYM(n, DeviceGetMigDeviceHandleByIndex);
	SYM(n, EventSetCreate);
	SYM(n, EventSetFree);
	SYM(n, DeviceGetSupportedEventTypes);
	SYM(n, DeviceRegisterEvents);
	SYM(n, EventSetWait_v2);
}

static const char *errstr(const struct cw_nvml *n, nvmlReturn_t r)
{
	const char *s = n->ErrorString ? n->ErrorString(r) : NULL;
	return s ? s : "unknown error";
}

/* NVML strings come from a foreign library: copy within the buffer and
 * keep printable ASCII only. */
static void clean_copy(char *dst, size_t cap, const char *src, size_t srccap)
{
	size_t i;

	for (i = 0; i + 1 < cap && i < srccap && src[i]; i++)
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

static int64_t u_or(nvmlReturn_t r, unsigned long long v)
{
	return r == NVML_SUCCESS && v <= (1ULL << 62) ? (int64_t)v : -1;
}

static void describe(struct cw_nvml *n, int i, nvmlDevice_t d, int parent)
{
	struct cw_gpu_device *g = &n->info[i];
	char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	nvmlPciInfo_t pci;
	nvmlMemory_t mem;
	unsigned int v, pend;

	memset(g, 0, sizeof(*g));
	g->index = i;
	g->parent = parent;
	g->mem_total = g->power_limit_mw = g->max_sm_mhz = g->max_mem_mhz = -1;
	if (n->DeviceGetUUID && n->DeviceGetUUID(d, buf, sizeof(buf)) == NVML_SUCCESS)
		clean_copy(g->uuid, sizeof(g->uuid), buf, sizeof(buf));
	if (n->DeviceGetName && n->DeviceGetName(d, buf, sizeof(buf)) == NVML_SUCCESS)
		clean_copy(g->name, sizeof(g->name), buf, sizeof(buf));
	memset(&pci, 0, sizeof(pci));
	if (n->DeviceGetPciInfo_v3 && n->DeviceGetPciInfo_v3(d, &pci) == NVML_SUCCESS)
		clean_copy(g->pci, sizeof(g->pci), pci.busId, sizeof(pci.busId));
	if (n->DeviceGetMemoryInfo && n->DeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS)
		g->mem_total = u_or(NVML_SUCCESS, mem.total);
	if (n->DeviceGetEnforcedPowerLimit && n->DeviceGetEnforcedPowerLimit(d, &v) == NVML_SUCCESS)
		g->power_limit_mw = v;
	if (n->DeviceGetMaxClockInfo && n->DeviceGetMaxClockInfo(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
		g->max_sm_mhz = v;
	if (n->DeviceGetMaxClockInfo && n->DeviceGetMaxClockInfo(d, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
		g->max_mem_mhz = v;
	if (n->DeviceGetMigMode && n->DeviceGetMigMode(d, &v, &pend) == NVML_SUCCESS)
		g->mig = v == NVML_DEVICE_MIG_ENABLE;
	if (!g->uuid[0])
		snprintf(g->uuid, sizeof(g->uuid), "GPU-index-%d", i);
}

int cw_nvml_open(struct cw_nvml **out, const char *path, char *why, size_t whylen)
{
	struct cw_nvml *n;
	unsigned int count = 0;
	nvmlReturn_t r;

	*out = NULL;
	if (!path)
		path = getenv("CW_NVML_LIB");
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	snprintf(n->path, sizeof(n->path), "%s", path);
	n->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!n->h) {
		snprintf(why, whylen, "\"%s\" not found (no NVIDIA driver)", path);
		free(n);
		return -ENOENT;
	}
	resolve(n);
	if (!n->Init_v2 || !n->DeviceGetCount_v2 || !n->DeviceGetHandleByIndex_v2) {
		snprintf(why, whylen, "\"%s\" lacks nvmlInit_v2/nvmlDeviceGetCount_v2", path);
		dlclose(n->h);
		free(n);
		return -ENOENT;
	}
	r = n->Init_v2();
	if (r != NVML_SUCCESS) {
		snprintf(why, whylen, "nvmlInit failed: %s", errstr(n, r));
		dlclose(n->h);
		free(n);
		return -ENODEV;
	}
	if (n->SystemGetDriverVersion) {
		char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
		if (n->SystemGetDriverVersion(buf, sizeof(buf)) == NVML_SUCCESS)
			clean_copy(n->driver, sizeof(n->driver), buf, sizeof(buf));
	}
	if (n->DeviceGetCount_v2(&count) != NVML_SUCCESS)
		count = 0;
	for (unsigned int i = 0; i < count && n->ndev < CW_GPU_MAX; i++) {
		nvmlDevice_t d;
		int board;

		if (n->DeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS)
			continue;
		board = n->ndev;
		n->dev[n->ndev] = d;
		describe(n, n->ndev, d, -1);
		n->ndev++;
		/* MIG instances are devices of their own to NVML's per-device
		 * queries; they follow their board. */
		if (n->info[board].mig && n->DeviceGetMaxMigDeviceCount && n->DeviceGetMigDeviceHandleByIndex) {
			unsigned int m = 0;
			n->DeviceGetMaxMigDeviceCount(d, &m);
			for (unsigned int k = 0; k < m && n->ndev < CW_GPU_MAX; k++) {
				nvmlDevice_t md;
				if (n->DeviceGetMigDeviceHandleByIndex(d, k, &md) != NVML_SUCCESS)
					continue;
				n->dev[n->ndev] = md;
				describe(n, n->ndev, md, board);
				if (!n->info[n->ndev].pci[0])
					memcpy(n->info[n->ndev].pci, n->info[board].pci, sizeof(n->info[board].pci));
				n->ndev++;
			}
		}
	}
	*out = n;
	return 0;
}

void cw_nvml_close(struct cw_nvml *n)
{
	if (!n)
		return;
	if (n->evset && n->EventSetFree)
		n->EventSetFree(n->evset);
	if (n->Shutdown)
		n->Shutdown();
	dlclose(n->h);
	free(n);
}

const char *cw_nvml_driver(const struct cw_nvml *n) { return n->driver; }
const char *cw_nvml_path(const struct cw_nvml *n) { return n->path; }
int cw_nvml_count(const struct cw_nvml *n) { return n->ndev; }

const struct cw_gpu_device *cw_nvml_device(const struct cw_nvml *n, int i)
{
	return i >= 0 && i < n->ndev ? &n->info[i] : NULL;
}

int cw_nvml_sample(struct cw_nvml *n, int i, struct cw_gpu_sample *s)
{
	nvmlDevice_t d;
	unsigned int v, a, b, c, e;
	unsigned long long ull;
	nvmlReturn_t r;
	int ok = 0;

	cw_gpu_sample_clear(s);
	if (i < 0 || i >= n->ndev)
		return -EINVAL;
	s->device = i;
	d = n->dev[i];
#define TAKE(expr) ((r = (expr)) == NVML_SUCCESS ? (ok++, 1) : 0)
	if (n->DeviceGetUtilizationRates) {
		nvmlUtilization_t u;
		if (TAKE(n->DeviceGetUtilizationRates(d, &u)))
			s->gpu_util = u.gpu, s->mem_util = u.memory;
		else if (r == NVML_ERROR_GPU_IS_LOST)
			return -ENODEV;
	}
	if (n->DeviceGetMemoryInfo_v2) {
		nvmlMemory_v2_t m;
		memset(&m, 0, sizeof(m));
		m.version = nvmlMemory_v2;
		if (TAKE(n->DeviceGetMemoryInfo_v2(d, &m))) {
			s->mem_total = u_or(r, m.total);
			s->mem_used = u_or(r, m.used);
			s->mem_free = u_or(r, m.free);
			s->mem_reserved = u_or(r, m.reserved);
		}
	}
	if (s->mem_total < 0 && n->DeviceGetMemoryInfo) {
		nvmlMemory_t m;
		if (TAKE(n->DeviceGetMemoryInfo(d, &m))) {
			s->mem_total = u_or(r, m.total);
			s->mem_used = u_or(r, m.used);
			s->mem_free = u_or(r, m.free);
		}
	}
	if (n->DeviceGetTemperature && TAKE(n->DeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v)))
		s->temp_gpu = v;
	/* Memory (HBM) temperature is a field value, not a sensor. */
	if (n->DeviceGetFieldValues) {
		nvmlFieldValue_t fv;
		memset(&fv, 0, sizeof(fv));
		fv.fieldId = NVML_FI_DEV_MEMORY_TEMP;
		if (TAKE(n->DeviceGetFieldValues(d, 1, &fv)) && fv.nvmlReturn == NVML_SUCCESS) {
			if (fv.valueType == NVML_VALUE_TYPE_UNSIGNED_INT)
				s->temp_mem = fv.value.uiVal;
			else if (fv.valueType == NVML_VALUE_TYPE_SIGNED_INT)
				s->temp_mem = fv.value.siVal;
			else if (fv.valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG && fv.value.ullVal < 1000)
				s->temp_mem = (int64_t)fv.value.ullVal;
			else if (fv.valueType == NVML_VALUE_TYPE_SIGNED_LONG_LONG)
				s->temp_mem = fv.value.sllVal;
		}
	}
	if (n->DeviceGetPowerUsage && TAKE(n->DeviceGetPowerUsage(d, &v)))
		s->power_mw = v;
	if (n->DeviceGetTotalEnergyConsumption && TAKE(n->DeviceGetTotalEnergyConsumption(d, &ull)))
		s->energy_mj = u_or(r, ull);
	if (n->DeviceGetClockInfo && TAKE(n->DeviceGetClockInfo(d, NVML_CLOCK_SM, &v)))
		s->sm_mhz = v;
	if (n->DeviceGetClockInfo && TAKE(n->DeviceGetClockInfo(d, NVML_CLOCK_MEM, &v)))
		s->mem_mhz = v;
	/* The "event reasons" name replaced "throttle reasons" in R535; older
	 * drivers have only the latter, with the same bits. */
	if (n->DeviceGetCurrentClocksEventReasons && TAKE(n->DeviceGetCurrentClocksEventReasons(d, &ull)))
		s->reasons = u_or(r, ull);
	else if (n->DeviceGetCurrentClocksThrottleReasons && TAKE(n->DeviceGetCurrentClocksThrottleReasons(d, &ull)))
		s->reasons = u_or(r, ull);
	if (n->DeviceGetTotalEccErrors) {
		if (TAKE(n->DeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull)))
			s->ecc_sbe = u_or(r, ull);
		if (TAKE(n->DeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull)))
			s->ecc_dbe = u_or(r, ull);
	}
	if (n->DeviceGetPcieReplayCounter && TAKE(n->DeviceGetPcieReplayCounter(d, &v)))
		s->pcie_replay = v;
	if (n->DeviceGetRetiredPages) {
		/* A NULL address array with count 0 asks only for the count. */
		a = 0;
		r = n->DeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &a, NULL);
		if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE)
			s->retired_sbe = a, ok++;
		a = 0;
		r = n->DeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &a, NULL);
		if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE)
			s->retired_dbe = a, ok++;
	}
	if (n->DeviceGetRemappedRows && TAKE(n->DeviceGetRemappedRows(d, &a, &b, &c, &e))) {
		s->remap_corr = a;
		s->remap_unc = b;
		s->remap_pending = c != 0;
		s->remap_failure = e != 0;
	}
	if (n->DeviceGetNvLinkState && n->DeviceGetNvLinkErrorCounter) {
		int64_t sum = -1;
		for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			int active = 0;
			if (n->DeviceGetNvLinkState(d, l, &active) != NVML_SUCCESS || !active)
				continue;
			for (int k = NVML_NVLINK_ERROR_DL_REPLAY; k <= NVML_NVLINK_ERROR_DL_CRC_DATA; k++)
				if (n->DeviceGetNvLinkErrorCounter(d, l, k, &ull) == NVML_SUCCESS && ull < (1ULL << 53))
					sum = (sum < 0 ? 0 : sum) + (int64_t)ull;
		}
		if (sum >= 0)
			s->nvlink_errors = sum, ok++;
	}
#undef TAKE
	cw_gpu_sample_sanitize(s);
	return ok;
}

#define PROC_MAX 256

int cw_nvml_processes(struct cw_nvml *n, int i, struct cw_gpu_proc *out, int cap)
{
	nvmlProcessInfo_t info[PROC_MAX];
	nvmlProcessUtilizationSample_t util[PROC_MAX];
	unsigned int count = PROC_MAX, nu = PROC_MAX;
	int k = 0;

	if (i < 0 || i >= n->ndev || !n->DeviceGetComputeRunningProcesses_v3)
		return -EINVAL;
	if (n->DeviceGetComputeRunningProcesses_v3(n->dev[i], &count, info) != NVML_SUCCESS)
		return -EIO;
	if (count > PROC_MAX)
		count = PROC_MAX;
	if (!n->DeviceGetProcessUtilization ||
	    n->DeviceGetProcessUtilization(n->dev[i], util, &nu, n->util_ts[i]) != NVML_SUCCESS)
		nu = 0;
	if (nu > PROC_MAX)
		nu = PROC_MAX;
	for (unsigned int p = 0; p < count && k < cap; p++) {
		struct cw_gpu_proc *o = &out[k++];
		o->pid = info[p].pid;
		o->used_bytes = info[p].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE || info[p].usedGpuMemory > (1ULL << 50)
					? -1
					: (int64_t)info[p].usedGpuMemory;
		o->sm_util = o->mem_util = -1;
		for (unsigned int u = 0; u < nu; u++)
			if (util[u].pid == info[p].pid) {
				o->sm_util = util[u].smUtil <= 100 ? (int64_t)util[u].smUtil : -1;
				o->mem_util = util[u].memUtil <= 100 ? (int64_t)util[u].memUtil : -1;
			}
	}
	for (unsigned int u = 0; u < nu; u++)
		if (util[u].timeStamp > n->util_ts[i])
			n->util_ts[i] = util[u].timeStamp;
	return k;
}

int cw_nvml_events_enable(struct cw_nvml *n)
{
	int reg = 0;

	if (!n->EventSetCreate || !n->DeviceRegisterEvents || !n->EventSetWait_v2)
		return 0;
	if (!n->evset && n->EventSetCreate(&n->evset) != NVML_SUCCESS) {
		n->evset = NULL;
		return 0;
	}
	for (int i = 0; i < n->ndev; i++) {
		unsigned long long types = nvmlEventTypeXidCriticalError;
		if (n->info[i].parent >= 0)
			continue; /* the board's registration covers its instances */
		if (n->DeviceGetSupportedEventTypes && n->DeviceGetSupportedEventTypes(n->dev[i], &types) == NVML_SUCCESS &&
		    !(types & nvmlEventTypeXidCriticalError))
			continue;
		if (n->DeviceRegisterEvents(n->dev[i], nvmlEventTypeXidCriticalError, n->evset) == NVML_SUCCESS)
			reg++;
	}
	return reg;
}

int cw_nvml_event_wait(struct cw_nvml *n, unsigned timeout_ms, int *device, uint64_t *code)
{
	nvmlEventData_t ev;
	nvmlReturn_t r;

	if (!n->evset)
		return 0;
	memset(&ev, 0, sizeof(ev));
	r = n->EventSetWait_v2(n->evset, &ev, timeout_ms);
	if (r == NVML_ERROR_TIMEOUT)
		return 0;
	if (r != NVML_SUCCESS)
		return -EIO;
	if (!(ev.eventType & nvmlEventTypeXidCriticalError))
		return 0;
	*device = -1;
	for (int i = 0; i < n->ndev; i++)
		if (n->dev[i] == ev.device) {
			*device = i;
			break;
		}
	*code = ev.eventData;
	return 1;
}
