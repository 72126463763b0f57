# The Debian package: "cpack -G DEB" in the build directory writes jitterd_VERSION_ARCH.deb.
# It installs under /usr, with the configuration in /etc, the units where systemd looks for
# them, and maintainer scripts that create the user and directories and enable the socket.

set(CPACK_PACKAGE_NAME jitterd)
set(CPACK_PACKAGE_VENDOR "jitterd")
set(JITTERD_PACKAGE_MAINTAINER "jitterd maintainers <jitterd@localhost>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${JITTERD_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "CPU jitter monitor for isolated cores")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_NAME jitterd)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The synopsis is CPACK_PACKAGE_DESCRIPTION_SUMMARY; cpack indents these lines and turns the
# empty one into the paragraph separator.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "jitterd measures, continuously and to the nanosecond, how often and for how
long the kernel, the hardware and other tasks take a CPU away from a task that
wants all of it: busy-loop counter probes pinned to the probed CPUs, jitter
histograms over rolling windows, interruptions with their likely cause, and a
tuning audit of isolcpus, nohz_full, IRQ affinity and the like.

The daemon is socket-activated and serves Varlink on /run/jitterd/io.jitterd;
jitterctl queries it, jitter-probe makes a one-shot measurement.")
# Library dependencies come from dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/debian/postinst
    ${CMAKE_CURRENT_SOURCE_DIR}/debian/prerm
    ${CMAKE_CURRENT_SOURCE_DIR}/debian/postrm
    ${CMAKE_CURRENT_SOURCE_DIR}/debian/conffiles)

# A Debian package keeps its configuration in /etc whatever the prefix. GNUInstallDirs leaves
# a relative CMAKE_INSTALL_SYSCONFDIR ("etc") that would put it in /usr/etc under the package
# prefix, so the staged tree is corrected before it is packed. Nothing to do when the build
# was configured with -DCMAKE_INSTALL_SYSCONFDIR=/etc.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/packaging-sysconfdir.cmake)

include(CPack)
