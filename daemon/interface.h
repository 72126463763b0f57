#pragma once

/* The text of config/io.jitterd.varlink, compiled into the daemon so that
 * org.varlink.service.GetInterfaceDescription never depends on a file at run time. */
extern const char jitterd_interface_description[];
