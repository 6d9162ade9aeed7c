/* A provider module whose table has another size than the host's (as if
 * built against headers with a member more): the host must refuse it. */
#include <airlock/provider.h>

#include "../../examples/provider/example_provider.h"

static al_provider_ops ops;

const al_provider_ops *al_provider_module_entry(void)
{
	ops = example_provider_ops;
	ops.struct_size = sizeof(al_provider_ops) + sizeof(void *);
	return &ops;
}
