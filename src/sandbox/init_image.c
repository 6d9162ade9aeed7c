/* The sandbox's airlock-init in a sealed memfd.  See init_image.h. */
#include "sandbox/init_image.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

#define IMAGE_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static pthread_mutex_t image_lock = PTHREAD_MUTEX_INITIALIZER;
static int image_fd = -1;
/* A refusal that will not change in this process (no memfd, or none
 * executable here): remembered, not asked again on every run. */
static int image_refused;

static int make_image(void)
{
	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd = memfd_create("airlock-init", flags | MFD_EXEC);
	if (fd < 0 && errno == EINVAL) /* before 6.3: no MFD_EXEC, exec allowed */
		fd = memfd_create("airlock-init", flags);
	if (fd < 0)
		return -errno;
	const unsigned char *p = al_sb_init_image;
	size_t left = (size_t)al_sb_init_image_bytes;
	int rc = 0;
	while (left > 0 && rc == 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else {
			p += n;
			left -= (size_t)n;
		}
	}
	/* execute only: the run's uid may not read it (init_image.h) */
	if (rc == 0 && (fchmod(fd, 0111) < 0 ||
			fcntl(fd, F_ADD_SEALS, IMAGE_SEALS) < 0))
		rc = -errno;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int al_sb_init_image_fd(void)
{
	pthread_mutex_lock(&image_lock);
	/* Still ours?  A caller that closed every descriptor it did not
	 * know (or reused the number) leaves no sealed memfd behind it. */
	if (image_fd >= 0 && fcntl(image_fd, F_GET_SEALS) != IMAGE_SEALS)
		image_fd = -1;
	int fd = image_fd;
	if (fd < 0 && image_refused != 0)
		fd = image_refused;
	else if (fd < 0) {
		fd = make_image();
		if (fd >= 0)
			image_fd = fd;
		else if (fd == -ENOSYS || fd == -EACCES || fd == -EPERM ||
			 fd == -EINVAL)
			image_refused = fd;
	}
	pthread_mutex_unlock(&image_lock);
	return fd;
}
