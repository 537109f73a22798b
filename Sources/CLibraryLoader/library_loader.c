// See include/cid_library.h.
#include "cid_library.h"

#include <dlfcn.h>
#include <stdio.h>

void *cid_library_open(const char *const names[], const char *library, const char *package,
                       char *error, size_t error_size) {
    void *handle = NULL;
    for (int i = 0; names[i] != NULL && handle == NULL; i++) handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s is not installed (Debian: apt-get install %s): %s", library, package,
                 why != NULL ? why : "not found");
    }
    return handle;
}

int cid_library_resolve(void *handle, const cid_symbol symbols[], const char *library, const char *hint,
                        char *error, size_t error_size) {
    for (int i = 0; symbols[i].name != NULL; i++) {
        // POSIX's way to store a function's address from dlsym's object pointer.
        if ((*symbols[i].address = cid_library_symbol(handle, symbols[i].name)) == NULL) {
            snprintf(error, error_size, "%s lacks %s%s", library, symbols[i].name, hint);
            return 0;
        }
    }
    return 1;
}

void *cid_library_symbol(void *handle, const char *name) { return dlsym(handle, name); }

void cid_library_close(void *handle) { dlclose(handle); }
