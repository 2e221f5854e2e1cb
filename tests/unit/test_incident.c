/* Incidents in time: a few seconds of slow calls against the op's normal,
 * found wherever they sit in the window (analysis/incident.c), and
 * explained at the same severity in a minute or an hour of data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "analysis/incident.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define US 1000ULL
#define OFF 1700000000000000000LL
#define PID 100
#define HOG 977
#define HOG2 978

/* n seconds of `per` calls of mean_ns, seconds [slow0, slow0 + nslow) at
 * slow_ns instead. */
static struct cw_opstat secs(size_t n, uint64_t per, uint64_t mean_ns, size_t slow0, size_t nslow, uint64_t slow_ns)
{
	struct cw_opstat st = { .node = "n1", .source = "cuda", .op = "cudaStreamSynchronize" };

	st.secs = calloc(n, sizeof(*st.secs));
	assert_non_null(st.secs);
	st.nsecs = n;
	for (size_t i = 0; i < n; i++) {
		uint64_t m = i >= slow0 && i < slow0 + nslow ? slow_ns : mean_ns;
		st.secs[i] = (struct cw_opsec){ .second = 1000 + (int64_t)i, .count = per, .sum_ns = per * m,
						.max_ns = m };
	}
	return st;
}

static void test_find(void **state)
{
	struct cw_incident inc;
	struct cw_opstat st;

	(void)state;
	/* 3 s at 10x in an hour: found, at its own seconds */
	st = secs(3600, 100, MS, 1800, 3, 10 * MS);
	assert_int_equal(cw_incident_find(&st, &inc), 1);
	assert_int_equal(inc.from_sec, 2800);
	assert_int_equal(inc.to_sec, 2802);
	assert_int_equal(inc.normal_mean_ns, MS);
	assert_int_equal(inc.excess_ns, 3 * 100 * 9 * MS);
	free(st.secs);
	/* one slow second is a spike, not an incident */
	st = secs(3600, 100, MS, 1800, 1, 10 * MS);
	assert_int_equal(cw_incident_find(&st, &inc), 0);
	free(st.secs);
	/* 2.9x the normal is not slow */
	st = secs(600, 100, MS, 300, 5, 2900 * US);
	assert_int_equal(cw_incident_find(&st, &inc), 0);
	free(st.secs);
	/* slow seconds costing under 100 ms beyond the normal */
	st = secs(600, 2, MS, 300, 5, 10 * MS);
	assert_int_equal(cw_incident_find(&st, &inc), 0);
	free(st.secs);
	/* the costlier of two incidents */
	st = secs(600, 100, MS, 100, 2, 5 * MS);
	for (size_t i = 400; i < 404; i++)
		st.secs[i].sum_ns = 100 * 8 * MS;
	assert_int_equal(cw_incident_find(&st, &inc), 1);
	assert_int_equal(inc.from_sec, 1400);
	assert_int_equal(inc.to_sec, 1403);
	free(st.secs);
	/* too few seconds to know the normal */
	st = secs(4, 100, MS, 1, 2, 10 * MS);
	assert_int_equal(cw_incident_find(&st, &inc), 0);
	free(st.secs);
}

/* The time of c's timeline entry that contains text; fails when none. */
static uint64_t timeline_at(const struct cw_chain *c, const char *text)
{
	for (int i = 0; i < c->ntimeline; i++)
		if (strstr(c->timeline[i].text, text))
			return c->timeline[i].t_ns;
	for (int i = 0; i < c->ntimeline; i++)
		print_message("timeline %d: %s\n", i, c->timeline[i].text);
	fail_msg("no timeline entry with \"%s\"", text);
	return 0;
}

struct fx {
	char path[64];
	struct cw_store *st;
};

/* A new store in f with one session and the loop's process (PID),
 * and its writer. */
static struct cw_writer *open_store(struct fx *f)
{
	struct cw_session_info si = { .node = "n1", .kind = "test", .started_wall_ns = T0 + OFF, .mono_to_wall_ns = OFF,
				      .rank = -1, .local_rank = -1, .world_size = -1 };
	struct cw_writer_opts wo = { .node = "n1" };
	struct cw_process_row pr = { .pid = PID, .comm = "python", .rank = -1, .local_rank = -1, .world_size = -1,
				     .start_wall_ns = T0 + OFF };
	struct cw_writer *w;
	char err[256];
	int64_t sid;
	int fd;

	strcpy(f->path, "/tmp/cw-test-incident-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(w, &pr), 0);
	return w;
}

/* `seconds` of a training loop (20 syncs/s of 1 ms, spinning); from
 * second `at` for 3 s a hog on the thread's CPU makes each sync 20 ms,
 * 19 of them preempted. */
static void build_noisy(struct fx *f, int seconds, int at, int at2, int noisy);
/* Who preempts the noisy calls: another task, or the hog itself. */
static int noise_by_hog;

static void build(struct fx *f, int seconds, int at)
{
	build_noisy(f, seconds, at, -1, 0);
}

/* noisy: every 25th call of the loop is also 5 ms, preempted by another
 * task (pid 555): a tail over the whole window, with its own culprit.
 * at2 >= 0: a second incident from second at2, by another hog (ffmpeg,
 * pid HOG2). */
static void build_noisy(struct fx *f, int seconds, int at, int at2, int noisy)
{
	struct cw_writer *w = open_store(f);

	for (int s = 0; s < seconds; s++)
		for (int k = 0; k < 20; k++) {
			uint64_t t = T0 + (uint64_t)s * SEC + (uint64_t)k * 50 * MS;
			int second = at2 >= 0 && s >= at2 && s < at2 + 3;
			int slow = (s >= at && s < at + 3) || second;
			int noise = noisy && !slow && (s * 20 + k) % 25 == 0;
			uint64_t d = slow ? 20 * MS : noise ? 5 * MS : MS + (uint64_t)(k % 5) * 20 * US;
			struct cw_event_row r = { .mono_ns = t, .wall_ns = t + OFF, .duration_ns = d, .pid = PID,
						  .tid = PID, .comm = "python", .source = "cuda",
						  .op = "cudaStreamSynchronize", .device = 0, .has_ret = 1 };
			assert_int_equal(cw_writer_event(w, &r), 0);
			if (noise) {
				struct cw_offcpu_row o = { .pid = PID, .tid = PID, .comm = "python",
							   .start_mono_ns = t + 500 * US, .end_mono_ns = t + 4500 * US,
							   .wall_ns = t + 500 * US + OFF, .reason = "preempted", .cpu = 3,
							   .by_pid = noise_by_hog ? HOG : 555,
							   .by_tid = noise_by_hog ? HOG : 555,
							   .by_comm = noise_by_hog ? "stress-ng" : "kworker/3" };
				assert_int_equal(cw_writer_offcpu(w, &o), 0);
			}
			if (slow) {
				struct cw_offcpu_row o = { .pid = PID, .tid = PID, .comm = "python",
							   .start_mono_ns = t + 500 * US, .end_mono_ns = t + 19500 * US,
							   .wall_ns = t + 500 * US + OFF, .reason = "preempted", .cpu = 3,
							   .by_pid = second ? HOG2 : HOG, .by_tid = second ? HOG2 : HOG,
							   .by_comm = second ? "ffmpeg" : "stress-ng" };
				assert_int_equal(cw_writer_offcpu(w, &o), 0);
			}
		}
	assert_int_equal(cw_writer_free(w), 0);
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

/* explain over [from_s, to_s) of the store: the one chain, HIGH, about the
 * hog; found in time (in_time: at the incident's seconds) or, in a window
 * short enough for the incident to be its tail, over the window. */
static void expect_incident(struct fx *f, int from_s, int to_s, int at, int in_time)
{
	struct cw_explain_opts o = { .from_wall_ns = T0 + OFF + (uint64_t)from_s * SEC,
				     .to_wall_ns = T0 + OFF + (uint64_t)to_s * SEC - 1 };
	struct cw_explain_result r;
	const struct cw_chain *c;

	assert_int_equal(cw_explain_run(f->st->db, &o, &r), 0);
	c = find(&r, CW_KIND_CPU_PREEMPTION);
	assert_non_null(c);
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_int_equal(c->culprit.pid, HOG);
	assert_int_equal(c->slow_count, 60);
	assert_true(c->explained_share > 0.9);
	if (in_time) {
		near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + (uint64_t)at * SEC));
		near(evidence(c, "incident_to_ns"), (double)(T0 + OFF + (uint64_t)(at + 3) * SEC - 1));
	}
	/* judged against the op's normal, not the slow seconds' own p50 */
	assert_true(c->p50_ns < 2 * MS);
	contains(c->summary, "by stress-ng (pid 977, cpu 3)");
	cw_explain_result_free(&r);
}

/* Every separate incident, in time order; the costliest when there are
 * more than asked for, with the count of all. */
static void test_find_all(void **state)
{
	struct cw_incident inc[16];
	struct cw_opstat st = secs(3600, 100, MS, 600, 3, 10 * MS);
	int total;

	(void)state;
	for (size_t i = 1800; i < 1805; i++)
		st.secs[i].sum_ns = 100 * 4 * MS;
	for (size_t i = 3000; i < 3002; i++)
		st.secs[i].sum_ns = 100 * 20 * MS;
	for (size_t i = 3300; i < 3302; i++)
		st.secs[i].sum_ns = 100 * 3500 * US;
	assert_int_equal(cw_incident_find_all(&st, inc, 3, &total), 3);
	assert_int_equal(total, 4);
	/* the 3300 one (2 x 250 ms beyond) is the cheapest, left out */
	assert_int_equal(inc[0].from_sec, 1600);
	assert_int_equal(inc[0].to_sec, 1602);
	assert_int_equal(inc[1].from_sec, 2800);
	assert_int_equal(inc[1].to_sec, 2804);
	assert_int_equal(inc[1].excess_ns, 5 * 100 * 3 * MS);
	assert_int_equal(inc[2].from_sec, 4000);
	assert_int_equal(inc[2].to_sec, 4001);
	assert_int_equal(cw_incident_find_all(&st, inc, 16, &total), 4);
	assert_int_equal(total, 4);
	assert_int_equal(inc[3].from_sec, 4300);
	/* two runs split by one normal second are two incidents */
	st.secs[1802].sum_ns = 100 * MS;
	assert_int_equal(cw_incident_find_all(&st, inc, 16, &total), 5);
	assert_int_equal(inc[1].to_sec, 2801);
	assert_int_equal(inc[2].from_sec, 2803);
	free(st.secs);
}

/* More incidents than are explained (CW_INCIDENT_MAX): the costliest
 * are kept, whatever their place in time, returned in time order; the
 * count is of all of them. */
#define MANY 20
/* The cheapest incidents, spread through the window (not the last ones,
 * so "the first 16 in time" differs from "the 16 costliest"). */
static int cheap_incident(int i)
{
	return i == 1 || i == 6 || i == 11 || i == 17;
}

/* Incident i's slow calls' mean (ms): distinct for every incident. */
static uint64_t incident_ms(int i)
{
	return cheap_incident(i) ? 4 + (uint64_t)i / 6 : 10 + (uint64_t)i;
}

static void test_find_all_cap(void **state)
{
	struct cw_incident inc[CW_INCIDENT_MAX + 1];
	struct cw_opstat st = secs(30 * MANY + 20, 100, MS, 0, 0, 0);
	int total, k = 0;

	(void)state;
	for (int i = 0; i < MANY; i++)
		for (int s = 0; s < 3; s++)
			st.secs[20 + 30 * i + s].sum_ns = 100 * incident_ms(i) * MS;
	assert_int_equal(cw_incident_find_all(&st, inc, CW_INCIDENT_MAX, &total), 16);
	assert_int_equal(total, MANY);
	for (int i = 0; i < MANY; i++) {
		if (cheap_incident(i))
			continue;
		assert_int_equal(inc[k].from_sec, 1000 + 20 + 30 * i);
		assert_int_equal(inc[k].to_sec, 1000 + 22 + 30 * i);
		assert_int_equal(inc[k].excess_ns, 3 * 100 * (incident_ms(i) - 1) * MS);
		k++;
	}
	assert_int_equal(k, 16);
	free(st.secs);
}

/* A store of MANY incidents of the loop's syncs (20/s of 1 ms), each 3 s
 * from second 20 + 30 i, by its own hog (pid 2000 + i), its syncs
 * incident_ms(i) each, preempted all but 1 ms. */
static void build_many(struct fx *f)
{
	struct cw_writer *w = open_store(f);

	for (int s = 0; s < 30 * MANY + 20; s++)
		for (int k = 0; k < 20; k++) {
			uint64_t t = T0 + (uint64_t)s * SEC + (uint64_t)k * 50 * MS;
			int i = (s - 20) / 30, slow = s >= 20 && (s - 20) % 30 < 3;
			uint64_t d = slow ? incident_ms(i) * MS : MS + (uint64_t)(k % 5) * 20 * US;
			struct cw_event_row r = { .mono_ns = t, .wall_ns = t + OFF, .duration_ns = d, .pid = PID,
						  .tid = PID, .comm = "python", .source = "cuda",
						  .op = "cudaStreamSynchronize", .device = 0, .has_ret = 1 };
			char comm[16];

			assert_int_equal(cw_writer_event(w, &r), 0);
			if (slow) {
				snprintf(comm, sizeof(comm), "hog%d", i);
				struct cw_offcpu_row o = { .pid = PID, .tid = PID, .comm = "python",
							   .start_mono_ns = t + 500 * US, .end_mono_ns = t + d - 500 * US,
							   .wall_ns = t + 500 * US + OFF, .reason = "preempted", .cpu = 3,
							   .by_pid = 2000 + i, .by_tid = 2000 + i, .by_comm = comm };
				assert_int_equal(cw_writer_offcpu(w, &o), 0);
			}
		}
	assert_int_equal(cw_writer_free(w), 0);
}

/* explain keeps the 16 costliest incidents' chains, each at its seconds
 * naming its own hog, and warns how many the window held. */
static void test_incidents_over_the_cap(void **state)
{
	struct fx f;
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result r;
	int seen[MANY] = { 0 }, incidents = 0, warned = 0;

	(void)state;
	build_many(&f);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	for (int i = 0; i < r.count; i++) {
		const struct cw_chain *c = &r.chains[i];
		int k = (int)(c->culprit.pid - 2000);

		if (!c->incident_from_ns)
			continue;
		incidents++;
		assert_int_equal(c->kind, CW_KIND_CPU_PREEMPTION);
		assert_true(k >= 0 && k < MANY);
		assert_false(cheap_incident(k));
		seen[k]++;
		near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + (uint64_t)(20 + 30 * k) * SEC));
	}
	assert_int_equal(incidents, 16);
	for (int k = 0; k < MANY; k++)
		assert_int_equal(seen[k], !cheap_incident(k));
	for (int i = 0; i < r.nwarnings; i++)
		if (strstr(r.warnings[i], "cudaStreamSynchronize on n1 had 20 incidents in the window; the 16 "
					  "costliest are explained (narrow --from/--to for the others)"))
			warned++;
	for (int i = 0; warned != 1 && i < r.nwarnings; i++)
		print_message("warning %d: %s\n", i, r.warnings[i]);
	assert_int_equal(warned, 1);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_hour(void **state)
{
	struct fx f;

	(void)state;
	build(&f, 3600, 2000);
	expect_incident(&f, 0, 3600, 2000, 1);     /* the whole hour */
	expect_incident(&f, 1970, 2030, 2000, 0);  /* the minute around it */
	expect_incident(&f, 1990, 2010, 2000, 0);  /* 20 s around it */
	destroy(&f);
}

/* The window's own tail (everyday noise, another culprit) does not hide
 * the incident: both are chains, the incident's at its seconds. */
static void test_incident_beside_noise(void **state)
{
	struct fx f;
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result r;
	int noise = 0, incident = 0;

	(void)state;
	build_noisy(&f, 600, 300, -1, 1);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	for (int i = 0; i < r.count; i++) {
		const struct cw_chain *c = &r.chains[i];

		if (c->kind != CW_KIND_CPU_PREEMPTION)
			continue;
		if (c->culprit.pid == 555)
			noise = 1;
		if (c->culprit.pid == HOG) {
			incident = 1;
			near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + 300 * SEC));
		}
	}
	assert_true(noise);
	assert_true(incident);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* Two incidents beside the noise, by two hogs: each its own chain, at
 * its own seconds, naming its own hog (not only the costlier one). */
static void test_incidents_each_their_own(void **state)
{
	struct fx f;
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result r;
	int noise = 0, first = 0, second = 0;

	(void)state;
	build_noisy(&f, 600, 150, 400, 1);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	for (int i = 0; i < r.count; i++) {
		const struct cw_chain *c = &r.chains[i];

		assert_int_equal(c->kind, CW_KIND_CPU_PREEMPTION);
		/* Each chain's "held by" line is at a call its own culprit
		 * preempted (the first of its longest), not at the window's
		 * slowest call, an incident's. */
		if (c->culprit.pid == 555) {
			noise++;
			assert_int_equal(c->incident_from_ns, 0);
			assert_int_equal(timeline_at(c, "CPU 3 held by kworker/3 (pid 555"), T0 + OFF);
		} else if (c->culprit.pid == HOG) {
			first++;
			near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + 150 * SEC));
			contains(c->summary, "by stress-ng (pid 977, cpu 3)");
			assert_int_equal(timeline_at(c, "CPU 3 held by stress-ng (pid 977"), T0 + OFF + 150 * SEC);
		} else {
			assert_int_equal(c->culprit.pid, HOG2);
			second++;
			near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + 400 * SEC));
			contains(c->summary, "by ffmpeg (pid 978, cpu 3)");
			assert_int_equal(timeline_at(c, "CPU 3 held by ffmpeg (pid 978"), T0 + OFF + 400 * SEC);
		}
	}
	assert_int_equal(noise, 1);
	assert_int_equal(first, 1);
	assert_int_equal(second, 1);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* The window's chain names the incident's hog too (it also preempts the
 * loop now and then all along, more in all than in the incident): the
 * window's chain is not the incident, which keeps its own chain at its
 * seconds. */
static void test_incident_of_the_window_culprit(void **state)
{
	struct fx f;
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result r;
	int window = 0, incident = 0;

	(void)state;
	noise_by_hog = 1;
	build_noisy(&f, 600, 300, -1, 1);
	noise_by_hog = 0;
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	for (int i = 0; i < r.count; i++) {
		const struct cw_chain *c = &r.chains[i];

		assert_int_equal(c->kind, CW_KIND_CPU_PREEMPTION);
		assert_int_equal(c->culprit.pid, HOG);
		if (c->incident_from_ns) {
			incident++;
			near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + 300 * SEC));
		} else {
			window++;
		}
	}
	assert_int_equal(window, 1);
	assert_int_equal(incident, 1);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* A hog that takes the loop's CPU for a whole call once a second, 3 s:
 * 12 s of 200 syncs/s of 1 ms, from second 5 the first sync of each
 * second 950 ms (preempted by the hog throughout when seen). 3 slow
 * calls among the incident's 603 are under 1 %: its p99 is 1 ms, its
 * seconds average ~6x the normal. */
static void build_whole_call_hog(struct fx *f, int seen)
{
	struct cw_writer *w = open_store(f);

	for (int s = 0; s < 12; s++) {
		int hog = s >= 5 && s < 8;
		uint64_t t = T0 + (uint64_t)s * SEC;

		for (int k = 0; k < (hog ? 201 : 200); k++) {
			uint64_t d = hog && k == 0 ? 950 * MS : MS + (uint64_t)(k % 5) * 20 * US;
			struct cw_event_row r = { .mono_ns = t, .wall_ns = t + OFF, .duration_ns = d, .pid = PID,
						  .tid = PID, .comm = "python", .source = "cuda",
						  .op = "cudaStreamSynchronize", .device = 0, .has_ret = 1 };

			assert_int_equal(cw_writer_event(w, &r), 0);
			if (hog && k == 0 && seen) {
				struct cw_offcpu_row o = { .pid = PID, .tid = PID, .comm = "python",
							   .start_mono_ns = t + 100 * US, .end_mono_ns = t + d - 100 * US,
							   .wall_ns = t + 100 * US + OFF, .reason = "preempted", .cpu = 3,
							   .by_pid = HOG, .by_tid = HOG, .by_comm = "stress-ng" };
				assert_int_equal(cw_writer_offcpu(w, &o), 0);
			}
			t += d + 20 * US;
		}
	}
	assert_int_equal(cw_writer_free(w), 0);
}

/* An incident whose slow calls are under 1 % of its calls is still
 * probed with every rule (it is slow by its seconds' means, not its
 * p99), and its first second is no start-up: the op ran before it. */
static void test_incident_of_few_whole_calls(void **state)
{
	struct cw_explain_opts o = { .from_wall_ns = T0 + OFF + 4 * SEC, .to_wall_ns = T0 + OFF + 11 * SEC - 1 };
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	build_whole_call_hog(&f, 1);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	c = find(&r, CW_KIND_CPU_PREEMPTION);
	assert_non_null(c);
	assert_int_equal(c->culprit.pid, HOG);
	assert_int_equal(c->slow_count, 3);
	near(evidence(c, "incident_from_ns"), (double)(T0 + OFF + 5 * SEC));
	assert_null(find(&r, CW_KIND_COLD_START));
	cw_explain_result_free(&r);
	destroy(&f);
	/* The hog unseen (no off-CPU interval): no rule explains the
	 * incident, and the 950 ms call in its first second is not read as
	 * the op's start-up. */
	build_whole_call_hog(&f, 0);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	assert_null(find(&r, CW_KIND_COLD_START));
	assert_null(find(&r, CW_KIND_CPU_PREEMPTION));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_healthy_hour(void **state)
{
	struct fx f;
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result r;

	(void)state;
	build(&f, 3600, 1 << 30);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_find_all),
		cmocka_unit_test(test_find_all_cap),
		cmocka_unit_test(test_incidents_over_the_cap),
		cmocka_unit_test(test_hour),
		cmocka_unit_test(test_incident_beside_noise),
		cmocka_unit_test(test_incidents_each_their_own),
		cmocka_unit_test(test_incident_of_the_window_culprit),
		cmocka_unit_test(test_incident_of_few_whole_calls),
		cmocka_unit_test(test_healthy_hour),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
