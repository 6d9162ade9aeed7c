/* A provider module built for another provider ABI version: the host
 * must refuse to load it (tests/integration/test_provider_modules.py). */
#include <airlock/provider.h>

#include "../../examples/provider/example_provider.h"

static al_provider_ops ops;

const al_provider_ops *al_provider_module_entry(void)
{
	ops = example_provider_ops;
	ops.abi_version = AL_PROVIDER_ABI_VERSION + 1;
	return &ops;
}
