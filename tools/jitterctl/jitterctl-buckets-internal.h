#pragma once

/* For the tests of jitterctl-buckets.c only: the sum of the counts, which the file uses itself. */

#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Sum of the counts of @n buckets. */
uint64_t buckets_total(const ReportBucket *b, size_t n);
