/*
 * junctiond — the Junction router daemon: arguments, signals, start and
 * orderly stop. (Start-up skeleton: routing arrives with the router issue.)
 */
#include <junction/common.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "junctiond: ready\n");
    return 0;
}
