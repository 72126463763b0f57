/* fuzz-history-load: the checkpoint reader (history_load) on arbitrary file bodies.
 *
 * The input is a version byte and the body of a state file: the target puts the header in
 * front (magic, the version: 1 when the byte is 1, the current one otherwise, the counter
 * frequency it loads with, an unknown boot id) and the CRC-32 behind, so that mutations reach
 * the parser of either format instead of stopping at the checksum. The seeds v1-* are bodies
 * of the previous format (the migration's path), the others of the current one. Checked: a
 * refused file leaves the history as it was; an accepted one answers every window and event
 * query, saves and loads back, and saving that again gives the same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "history-internal.h"

#define HLOAD_HZ 1000000000ULL
#define HLOAD_HEADER 36 /* magic 8, version 4, hz 8, boot id 16 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t hload_crc32(const uint8_t *p, size_t n)
{
        uint32_t crc = 0xffffffffu;

        while (n--) {
                crc ^= *p++;
                for (unsigned k = 0; k < 8; k++) {
                        crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
                }
        }
        return ~crc;
}

static void hload_put_le(uint8_t *p, uint64_t v, unsigned size)
{
        for (unsigned i = 0; i < size; i++) {
                p[i] = (uint8_t)(v >> (8 * i));
        }
}

/* Small retention, so that loading drops what does not fit. */
static int hload_new(History **ret)
{
        static const HistoryOptions opt = {
                .interval_ns = 1000000000ULL,
                .fine_retention_ns = 20000000000ULL,
                .coarse_interval_ns = 5000000000ULL,
                .coarse_retention_ns = 60000000000ULL,
                .events_per_cpu = 8,
        };

        return history_new(&opt, ret);
}

/* Saves @h into a new buffer. */
static uint8_t *hload_save(History *h, AttribTable *t, size_t *ret_len)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f || history_save(h, t, HLOAD_HZ, f) < 0 || fclose(f) != 0) {
                abort();
        }
        *ret_len = len;
        return (uint8_t *)buf;
}

static int hload_load(History *h, AttribTable *t, const uint8_t *buf, size_t len)
{
        FILE *f = fmemopen((void *)buf, len, "rb");
        int r;

        if (!f) {
                abort();
        }
        r = history_load(h, t, HLOAD_HZ, f);
        fclose(f);
        return r;
}

/* Whether @h answers every query about @cpu, and takes one more interval after its newest. */
static bool hload_answers(History *h, int cpu, HistoryWindow *w, const ProbeSlot *slot)
{
        static HistoryEvent ev[64];
        HistoryBand bands[HISTORY_BANDS];
        uint64_t kept = 0, end;

        if (history_query(h, cpu, 0, UINT64_MAX, false, w) < 0) {
                return false;
        }
        end = w->to_ns; /* the end of the newest interval kept */
        if (history_query(h, cpu, 0, 0, true, w) < 0 || history_event_bands(h, cpu, bands) < 0) {
                return false;
        }
        for (HistorySpan span = 0; span < HISTORY_SPAN_MAX; span++) {
                if (history_window(h, cpu, span, w) < 0) {
                        return false;
                }
        }
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                kept += bands[b].kept;
        }
        if (history_events(h, NULL, 0, 0, ev, 64) > 64 || kept > HISTORY_BANDS * 8) {
                return false;
        }
        return history_add_interval(h, cpu, end, 1000000000ULL, slot, false, NULL) >= 0 ||
               end > UINT64_MAX - 1000000000ULL;
}

/* Long because the loaded history is checked against every invariant in turn. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static ProbeSlot slot;
        HistoryWindow *w = malloc(sizeof(*w));
        History *h = NULL, *again = NULL;
        AttribTable *t = NULL, *t2 = NULL;
        uint32_t version = size > 0 && data[0] == 1 ? 1 : HISTORY_CHECKPOINT_VERSION;
        size_t body = size > 0 ? size - 1 : 0;
        uint8_t *file = malloc(HLOAD_HEADER + body + 4), *saved, *resaved;
        size_t len = HLOAD_HEADER + body, saved_len, resaved_len, mem;
        cpu_set_t cpus;
        int r;

        if (!w || !file || hload_new(&h) < 0 || attrib_table_new(&t) < 0) {
                abort();
        }
        memcpy(file, "JTRDHIST", 8);
        hload_put_le(file + 8, version, 4);
        hload_put_le(file + 12, HLOAD_HZ, 8);
        memset(file + 20, 0, 16);
        if (body > 0) {
                memcpy(file + HLOAD_HEADER, data + 1, body);
        }
        hload_put_le(file + len, hload_crc32(file, len), 4);
        len += 4;

        /* Something the history holds already, to see that a refused file leaves it alone. */
        slot_clear(&slot);
        stats_add(&slot.gap, 25);
        histogram_add(&slot.gap_hist, 25);
        if (history_add_interval(h, 3, 1000000000ULL, 1000000000ULL, &slot, false, NULL) < 0) {
                abort();
        }
        mem = history_memory_bytes(h);

        r = hload_load(h, t, file, len);
        if (r < 0) {
                if (r != -EBADMSG && r != -ENOSPC && r != -ENOMEM) {
                        fprintf(stderr, "fuzz-history-load: unexpected %d\n", r);
                        abort();
                }
                if (history_query(h, 3, 0, 0, true, w) < 0 || w->slot.gap.count != 1 ||
                    history_memory_bytes(h) != mem) {
                        fprintf(stderr, "fuzz-history-load: a refused file changed the history\n");
                        abort();
                }
        } else {
                /* What was accepted is saved as this history's own, which loads back and saves
                 * to the very same bytes. */
                saved = hload_save(h, t, &saved_len);
                if (hload_new(&again) < 0 || attrib_table_new(&t2) < 0) {
                        abort();
                }
                r = hload_load(again, t2, saved, saved_len);
                if (r < 0) {
                        fprintf(stderr, "fuzz-history-load: a saved history does not load: %d\n",
                                r);
                        abort();
                }
                resaved = hload_save(again, t2, &resaved_len);
                if (resaved_len != saved_len || memcmp(saved, resaved, saved_len) != 0) {
                        fprintf(stderr, "fuzz-history-load: save/load/save is not stable\n");
                        abort();
                }
                /* Every CPU it now holds answers a query over all its intervals, every
                 * standard window, its events; and goes on. */
                history_cpus(h, &cpus);
                for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                        if (CPU_ISSET(cpu, &cpus) && !hload_answers(h, cpu, w, &slot)) {
                                abort();
                        }
                }
                free(saved);
                free(resaved);
                history_free(again);
                attrib_table_free(t2);
        }
        history_free(h);
        attrib_table_free(t);
        free(file);
        free(w);
        return 0;
}
