/* example-local as a provider module: the one symbol the host resolves
 * (docs/writing-a-provider.md, "As a module"). */
#include <airlock/provider.h>

#include "example_provider.h"

const al_provider_ops *al_provider_module_entry(void)
{
	return &example_provider_ops;
}
