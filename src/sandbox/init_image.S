/* The sandbox's airlock-init (src/sbinit/main.c), built first and
 * embedded here whole, with its length; src/sandbox/init_image.c puts it
 * in a memfd. */
	.section .rodata.al_sb_init_image, "a"
	.balign 16
	.globl al_sb_init_image
	.hidden al_sb_init_image
al_sb_init_image:
	.incbin AL_SBINIT_PATH
al_sb_init_image_end:
	.balign 8
	.globl al_sb_init_image_bytes
	.hidden al_sb_init_image_bytes
al_sb_init_image_bytes:
	.quad al_sb_init_image_end - al_sb_init_image
	.section .note.GNU-stack, "", @progbits
