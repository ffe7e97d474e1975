/* tique serve --max-clients: MonetDB's embedded kernel (monetdbe 11.41) admits 64 client sessions, the default
 * of its "max_clients" option, and monetdbe_open offers no way to set it. This library, loaded with RTLD_GLOBAL
 * before the kernel starts, stands in for the kernel's GDKinit (monetdbe calls it through its PLT) and adds
 * max_clients=$TIQUE_MAX_CLIENTS to the options before calling the real one, which MCinit then reads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef enum { opt_builtin = 0, opt_config = 1, opt_cmdline = 2 } opt_kind;
typedef struct { opt_kind kind; char *name; char *value; } opt;
typedef int (*gdkinit_fn)(opt *set, int setlen, bool embedded);

static int find_libbat(struct dl_phdr_info *info, size_t size, void *found) {
    (void) size;
    if (info->dlpi_name && strstr(info->dlpi_name, "/libbat")) {
        *(char **) found = strdup(info->dlpi_name);
        return 1;
    }
    return 0;
}

static gdkinit_fn real_gdkinit(void) {
    char *path = NULL;
    dl_iterate_phdr(find_libbat, &path);
    if (!path) return NULL;
    void *handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    free(path);
    return handle ? (gdkinit_fn) dlsym(handle, "GDKinit") : NULL;
}

int tique_max_clients_loaded = 0;  /* set to 1 once the stand-in ran: the caller checks it took effect */

int GDKinit(opt *set, int setlen, bool embedded) {
    gdkinit_fn real = real_gdkinit();
    if (!real || real == (gdkinit_fn) GDKinit) return 0; /* GDK_FAIL */
    const char *wanted = getenv("TIQUE_MAX_CLIENTS");
    if (!wanted || !*wanted) return real(set, setlen, embedded);
    opt *more = malloc(sizeof(opt) * (size_t) (setlen + 1));
    if (!more) return 0;
    memcpy(more, set, sizeof(opt) * (size_t) setlen);
    more[setlen].kind = opt_cmdline;
    more[setlen].name = "max_clients";
    more[setlen].value = (char *) wanted;
    tique_max_clients_loaded = 1;
    return real(more, setlen + 1, embedded); /* GDKinit copies the values it keeps */
}
