/* Internal: directories whose subdirectories are spread over the file
 * system (see dir_spread.c). */
#ifndef AL_CORE_DIR_SPREAD_H
#define AL_CORE_DIR_SPREAD_H

/* Marks dirfd so that ext2/3/4 place each new subdirectory like a
 * top-level one; best effort (other file systems refuse or ignore it). */
void al_dir_spread_children(int dirfd);

#endif
