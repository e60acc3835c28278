/* placeholder: replaced by the CLI wiring */
#include <stdio.h>
int main(void) { puts("vitrine"); return 0; }
