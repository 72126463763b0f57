#pragma once

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "counter.h"

/* The daemon's configuration: /etc/jitterd/jitterd.conf plus drop-ins in
 * /etc/jitterd/jitterd.conf.d/NAME.conf, in INI syntax. Every key is described once, in the
 * typed key table of config.c (type, default, range, documentation); the loader, the
 * command-line overrides (config_set), config_dump and the tests all work from that table.
 *
 * This module never logs: problems found in a file are collected in a ConfigDiag, which the
 * caller prints. */

#ifndef CONFIG_MAIN_PATH
#define CONFIG_MAIN_PATH "/etc/jitterd/jitterd.conf"
#endif
#ifndef CONFIG_DROPIN_DIR
#define CONFIG_DROPIN_DIR "/etc/jitterd/jitterd.conf.d"
#endif

/* Buffer sizes of the string keys, terminating NUL included. */
#define CONFIG_PATH_MAX 4096
#define CONFIG_SOCKET_PATH_MAX 108 /* sizeof(((struct sockaddr_un *)0)->sun_path) */
#define CONFIG_GROUP_MAX 256

/* The effective configuration. Plain data: it may be copied by assignment, and needs no
 * freeing. Compare two with config_equal(), not memcmp(). */
typedef struct Config {
        /* [probe] */
        cpu_set_t probe_cpus;        /* empty: the isolated and nohz_full CPUs */
        unsigned probe_priority;     /* 0: SCHED_OTHER; 1..99: SCHED_FIFO priority */
        uint64_t probe_threshold_ns; /* a gap at least this long is an interruption */
        uint64_t probe_preheat_ns;   /* busy-looping before recording starts */
        CounterSource probe_counter; /* COUNTER_HW ("tsc") or COUNTER_CLOCK ("clock") */

        /* [history] */
        uint64_t history_interval_ns;
        uint64_t history_fine_retention_ns;
        uint64_t history_coarse_retention_ns;
        unsigned history_events_per_cpu;
        uint64_t history_checkpoint_ns; /* 0: no checkpoint is written or read */
        char history_state_dir[CONFIG_PATH_MAX];

        /* [server] */
        char server_socket[CONFIG_SOCKET_PATH_MAX]; /* "": chosen at run time */
        char server_admin_group[CONFIG_GROUP_MAX];  /* "": root only */
        unsigned server_max_clients;
        uint64_t server_max_message_bytes;
        uint64_t server_idle_timeout_ns;
        unsigned server_cpu_budget_percent;
        unsigned server_loop_priority; /* the event loop: 0: SCHED_OTHER; 1..99: SCHED_FIFO */

        /* [export] */
        char export_prometheus_textfile[CONFIG_PATH_MAX]; /* "": no export */
        uint64_t export_prometheus_textfile_interval_ns;

        /* [audit] */
        char audit_root[CONFIG_PATH_MAX]; /* "": the real /proc and /sys; never ends in '/' */

        /* [trace] */
        int trace_enabled;            /* 0 or 1 */
        uint64_t trace_keep_above_ns; /* 0: no capture is kept */
        unsigned trace_keep_per_minute;
        uint64_t trace_keep_max_bytes;
} Config;

typedef enum ConfigType {
        CONFIG_TYPE_UINT,     /* unsigned, decimal */
        CONFIG_TYPE_DURATION, /* uint64_t ns; "500ns", "20us", "1ms", "5min"; bare number = s */
        CONFIG_TYPE_SIZE,     /* uint64_t bytes; "65536", "64KiB", "1MiB" (K, M, G = 1024^n) */
        CONFIG_TYPE_CPULIST,  /* cpu_set_t; "2-5,8", "1-7:2" */
        CONFIG_TYPE_ENUM,     /* the enum type of the field; one of a list of names */
        CONFIG_TYPE_PATH,     /* char[]; empty or an absolute path */
        CONFIG_TYPE_GROUP,    /* char[]; empty or a group name */
} ConfigType;

/* CONFIG_TYPE_UINT/DURATION/SIZE: 0 is accepted outside min..max and means "disabled". */
#define CONFIG_FLAG_ZERO_DISABLES (1u << 0)

typedef struct ConfigEnumName {
        const char *name;
        int value;
} ConfigEnumName;

/* One key of the table. */
typedef struct ConfigKey {
        const char *section;
        const char *name;
        ConfigType type;
        const char *default_value;        /* as it would be written in the file */
        uint64_t min, max;                /* numeric types only */
        unsigned flags;                   /* CONFIG_FLAG_* */
        size_t offset;                    /* of the field in Config */
        size_t size;                      /* of the field in Config */
        const ConfigEnumName *enum_names; /* CONFIG_TYPE_ENUM only; ends with a NULL name */
        const char *doc;                  /* one or two sentences for the operator */
} ConfigKey;

typedef enum ConfigSeverity {
        CONFIG_SEVERITY_WARNING, /* the key or section is ignored; loading goes on */
        CONFIG_SEVERITY_ERROR,   /* the configuration is refused */
} ConfigSeverity;

typedef struct ConfigMessage {
        ConfigSeverity severity;
        char *text; /* "FILE:LINE: what is wrong", or "FILE: what is wrong" */
} ConfigMessage;

/* Messages collected while loading. Zero-initialise it ("ConfigDiag diag = {};") and release
 * it with config_diag_clear(). */
typedef struct ConfigDiag {
        ConfigMessage *messages;
        size_t n_messages;
        size_t n_errors;
} ConfigDiag;

/* Frees the messages of @diag (NULL is fine) and leaves it empty, ready for reuse. */
void config_diag_clear(ConfigDiag *diag);

/* Fills @c with the default of every key. */
void config_init_defaults(Config *c);

/* Loads @main_path (NULL: none) and then the files named *.conf in @dropin_dir (NULL: none)
 * in lexical order, a later value overriding an earlier one, on top of the defaults. A
 * missing file or drop-in directory is not an error; an unreadable one is. Every problem is
 * added to @diag (may be NULL): an unknown section or key is a warning, a syntax error or a
 * bad value an error. @c is replaced only when no error was found. Returns 0 on success (there
 * may be warnings), -EINVAL when an error was found, or -ENOMEM. */
int config_load(Config *c, const char *main_path, const char *dropin_dir, ConfigDiag *diag);

/* Checks the rules that involve more than one key (the coarse history must reach at least as
 * far back as the fine one). config_load() applies it itself. Returns 0, or -EINVAL with a
 * message to free() stored in @ret_error if that is not NULL; -ENOMEM. */
int config_check(const Config *c, char **ret_error);

/* Sets @section/@key to @value (surrounding whitespace ignored, as in a file; an empty value
 * restores the default) with the same validation as a file, for command-line options. On
 * failure @c is unchanged and, if @ret_error is not NULL, a message to free() such as
 * 'threshold: "10xs" is not a duration (use e.g. 500ns, 20us, 1ms)' is stored in it.
 * Returns 0, -ENOENT for an unknown key, -EINVAL for a bad value, or -ENOMEM. Call
 * config_check() once all options are applied. */
int config_set(Config *c, const char *section, const char *key, const char *value,
               char **ret_error);

/* Returns true if @a and @b hold the same values in @section, or in all sections if @section
 * is NULL (what a reload uses to decide which parts to restart). */
bool config_equal(const Config *a, const Config *b, const char *section);

/* Writes @c as an INI file that config_load() reads back to the same values. Returns 0,
 * -EIO, or -EINVAL as config_format_value(). */
int config_dump(const Config *c, FILE *f);
