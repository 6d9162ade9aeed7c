/* A shared object that is not a provider module: it defines no
 * al_provider_module_entry, and the host must say so. */
#include <airlock/provider.h>

#include "../../examples/provider/example_provider.h"

const al_provider_ops *not_the_entry(void);

const al_provider_ops *not_the_entry(void)
{
	return &example_provider_ops;
}
