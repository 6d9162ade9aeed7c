/* Cancel tokens: an eventfd that becomes readable once fired, so a
 * provider can poll it with its pipes; the first kind fired wins. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <airlock/provider.h>

struct al_cancel {
	atomic_int kind;
	int fd;
};

al_cancel *al_cancel_new(void)
{
	al_cancel *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	atomic_init(&c->kind, AL_CANCEL_NONE);
	c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

void al_cancel_free(al_cancel *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	free(c);
}

void al_cancel_fire(al_cancel *c, al_cancel_kind kind)
{
	int expected = AL_CANCEL_NONE;
	if (c == NULL || kind == AL_CANCEL_NONE)
		return;
	if (atomic_compare_exchange_strong(&c->kind, &expected, (int)kind)) {
		uint64_t one = 1;
		/* Cannot fail short of a bug: the counter starts at 0. */
		if (write(c->fd, &one, sizeof(one)) != sizeof(one))
			return;
	}
}

al_cancel_kind al_cancel_state(const al_cancel *c)
{
	if (c == NULL)
		return AL_CANCEL_NONE;
	return (al_cancel_kind)atomic_load(&((al_cancel *)c)->kind);
}

int al_cancel_fd(const al_cancel *c)
{
	return c != NULL ? c->fd : -1;
}
