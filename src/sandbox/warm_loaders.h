/* Internal: the language loaders a warm pool member starts with. */
#ifndef AL_SANDBOX_WARM_LOADERS_H
#define AL_SANDBOX_WARM_LOADERS_H

extern const char al_sb_warm_python_loader[];
extern const char al_sb_warm_node_loader[];

#endif
