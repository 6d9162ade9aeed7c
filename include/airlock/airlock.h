/* airlock — run untrusted code behind one vendor-neutral contract. */
#ifndef AIRLOCK_H
#define AIRLOCK_H

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/host.h>
#include <airlock/json.h>
#include <airlock/provider.h>

#define AIRLOCK_VERSION "0.1.0"

const char *al_version(void);

#endif
