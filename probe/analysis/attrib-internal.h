#pragma once

/* For the tests of attrib.c only: what the module keeps that its users need not see. */

#include "attrib.h"

/* What the system calls source @id, for display: for a device IRQ the action names from
 * /proc/interrupts ("virtio0-input.0", "ehci_hcd:usb1, snd_hda_intel"), for an architecture
 * row its text ("Local timer interrupts"); NULL when there is none. Updated when the kernel's
 * text changes (an IRQ number reused by another device). */
const char *attrib_table_description(const AttribTable *t, unsigned id);

/* Sets the description of @id (NULL or "" removes it). Returns 0, -EINVAL for an unknown id,
 * -ENOMEM. */
int attrib_table_set_description(AttribTable *t, unsigned id, const char *description);
