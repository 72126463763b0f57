/* A token bucket of CPU time. */

#include "budget.h"

#include <assert.h>
#include <math.h>

void budget_init(Budget *b, double rate, uint64_t burst_ns, uint64_t now_ns)
{
        assert(rate > 0);
        *b = (Budget){
                .rate = rate,
                .burst_ns = (double)burst_ns,
                .tokens_ns = (double)burst_ns,
                .last_ns = now_ns,
        };
}

/* Earns what the time since the last update is worth, up to the burst. A clock that went
 * backwards (it cannot, but a caller's might) earns nothing. */
static void budget_refill(Budget *b, uint64_t now_ns)
{
        if (now_ns <= b->last_ns) {
                return;
        }
        b->tokens_ns += (double)(now_ns - b->last_ns) * b->rate;
        if (b->tokens_ns > b->burst_ns) {
                b->tokens_ns = b->burst_ns;
        }
        b->last_ns = now_ns;
}

uint64_t budget_admit(Budget *b, uint64_t now_ns)
{
        double wait_ns;

        budget_refill(b, now_ns);
        if (b->tokens_ns > 0) {
                return 0;
        }
        /* Just past the debt: at that time the tokens are above zero. */
        wait_ns = floor(-b->tokens_ns / b->rate) + 1;
        return wait_ns < (double)UINT64_MAX ? (uint64_t)wait_ns : UINT64_MAX;
}

void budget_charge(Budget *b, uint64_t now_ns, uint64_t cost_ns)
{
        budget_refill(b, now_ns);
        b->tokens_ns -= (double)cost_ns;
}
