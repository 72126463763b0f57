/* Unit tests of probe/varlink/sockaddr-un.c: a file path keeps its terminator within sun_path,
 * an abstract "@name" may fill all of it, and what does not fit is refused; the addresses made
 * bind and connect. */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "sockaddr-un.h"

#define SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

static void test_path(void **state)
{
        struct sockaddr_un sa;
        socklen_t len;
        char path[SUN_PATH_MAX + 1];

        assert_int_equal(sockaddr_un_set(&sa, "/run/jitterd/io.jitterd", &len), 0);
        assert_int_equal(sa.sun_family, AF_UNIX);
        assert_string_equal(sa.sun_path, "/run/jitterd/io.jitterd");
        assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + strlen(sa.sun_path) + 1);

        /* The longest path that fits leaves room for its terminator. */
        memset(path, 'x', SUN_PATH_MAX - 1);
        path[0] = '/';
        path[SUN_PATH_MAX - 1] = '\0';
        assert_int_equal(sockaddr_un_set(&sa, path, &len), 0);
        assert_int_equal(len, sizeof(sa));
        path[SUN_PATH_MAX - 1] = 'x';
        path[SUN_PATH_MAX] = '\0';
        assert_int_equal(sockaddr_un_set(&sa, path, &len), -ENAMETOOLONG);
}

static void test_abstract(void **state)
{
        struct sockaddr_un sa;
        socklen_t len;
        char name[SUN_PATH_MAX + 2];

        assert_int_equal(sockaddr_un_set(&sa, "@jitterd", &len), 0);
        assert_int_equal(sa.sun_path[0], '\0');
        assert_memory_equal(sa.sun_path + 1, "jitterd", 7);
        assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 8);

        /* Unterminated, an abstract name may fill sun_path. */
        memset(name, 'x', SUN_PATH_MAX);
        name[0] = '@';
        name[SUN_PATH_MAX] = '\0';
        assert_int_equal(sockaddr_un_set(&sa, name, &len), 0);
        assert_int_equal(len, sizeof(sa));
        name[SUN_PATH_MAX] = 'x';
        name[SUN_PATH_MAX + 1] = '\0';
        assert_int_equal(sockaddr_un_set(&sa, name, &len), -ENAMETOOLONG);
}

static void test_invalid(void **state)
{
        struct sockaddr_un sa;
        socklen_t len;

        assert_int_equal(sockaddr_un_set(&sa, NULL, &len), -EINVAL);
        assert_int_equal(sockaddr_un_set(&sa, "", &len), -EINVAL);
        assert_int_equal(sockaddr_un_set(&sa, "@", &len), -EINVAL);
}

/* The address of either kind binds, and a second one made from the same name reaches it. */
static void test_bind_connect(void **state)
{
        char dir[] = "/tmp/test-sockaddr-un-XXXXXX";
        char path[PATH_MAX], abstract[64];
        const char *names[] = {path, abstract};

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/socket", dir);
        snprintf(abstract, sizeof(abstract), "@test-sockaddr-un-%d", (int)getpid());
        for (size_t i = 0; i < 2; i++) {
                struct sockaddr_un sa;
                socklen_t len;
                int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

                assert_true(l >= 0 && c >= 0);
                assert_int_equal(sockaddr_un_set(&sa, names[i], &len), 0);
                assert_int_equal(bind(l, (struct sockaddr *)&sa, len), 0);
                assert_int_equal(listen(l, 1), 0);
                assert_int_equal(sockaddr_un_set(&sa, names[i], &len), 0);
                assert_int_equal(connect(c, (struct sockaddr *)&sa, len), 0);
                close(c);
                close(l);
        }
        unlink(path);
        rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path),
                cmocka_unit_test(test_abstract),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_bind_connect),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
