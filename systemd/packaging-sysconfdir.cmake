# Run by cpack once the install tree is staged, before it is packed: moves what was installed
# to PREFIX/etc (a relative CMAKE_INSTALL_SYSCONFDIR) to /etc, where the daemon reads it.
set(_root "${CPACK_TEMPORARY_DIRECTORY}")
set(_from "${_root}${CPACK_PACKAGING_INSTALL_PREFIX}/etc")
if(CPACK_PACKAGING_INSTALL_PREFIX STREQUAL "/" OR NOT IS_DIRECTORY "${_from}")
        return()
endif()
file(GLOB _entries LIST_DIRECTORIES true RELATIVE "${_from}" "${_from}/*")
file(MAKE_DIRECTORY "${_root}/etc")
foreach(_entry IN LISTS _entries)
        if(EXISTS "${_root}/etc/${_entry}")
                message(FATAL_ERROR "both ${CPACK_PACKAGING_INSTALL_PREFIX}/etc/${_entry} and "
                                    "/etc/${_entry} are installed")
        endif()
        file(RENAME "${_from}/${_entry}" "${_root}/etc/${_entry}")
endforeach()
file(REMOVE_RECURSE "${_from}")
