#pragma once

/* For the tests of the audit only: the steps of audit_run() and the severity names, which its
 * users see only inside the report. */

#include "audit.h"

/* Runs the checks on what @a read; stores in @ret the report audit_run() describes. Returns 0
 * or -ENOMEM. */
int audit_findings(Audit *a, json_t **ret);

/* Returns the name of @severity ("ok", "info", "warning", "error"), or NULL if out of range. */
const char *audit_severity_to_string(AuditSeverity severity);

/* Parses a severity name; returns the AuditSeverity or -EINVAL. */
int audit_severity_from_string(const char *name);
