#pragma once

/* For the tests of fit.c only: what they read and reset of a Fit, which the analyses never
 * need. */

#include "fit.h"

/* Number of intervals added. */
size_t fit_intervals(const Fit *f);

/* Forgets all intervals. */
void fit_clear(Fit *f);
