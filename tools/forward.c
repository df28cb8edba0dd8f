/* forward.c: a test tool: wildcpu's forward pass on raw input, for comparison with the PyTorch
 * reference (../shared/bench/torch_ref.py compare).
 *
 *   forward CHECKPOINT INPUT.f32 OUTPUT.f32 BATCH
 *
 * INPUT holds float32 (BATCH, C, P, P) already normalized (the network's input, as in PyTorch);
 * OUTPUT receives the logits (BATCH, 1, P, P). P is the checkpoint's training patch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/model.h"
#include "wildcpu/util.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: forward CHECKPOINT INPUT.f32 OUTPUT.f32 BATCH\n");
        return 2;
    }
    int batch = atoi(argv[4]);
    wc_model m;
    if (batch < 1 || wc_model_load(&m, argv[1], batch, 0, 0) != WC_OK) return 1;
    const size_t nin = (size_t)batch * m.nfeat * m.patch * m.patch;
    const size_t nout = (size_t)batch * m.patch * m.patch;
    FILE *f = fopen(argv[2], "rb");
    if (!f || fread(wc_net_input(m.net), sizeof(float), nin, f) != nin) {
        fprintf(stderr, "forward: %s must hold %zu float32\n", argv[2], nin);
        return 1;
    }
    fclose(f);
    wc_net_forward(m.net, batch);
    f = fopen(argv[3], "wb");
    if (!f || fwrite(wc_net_output(m.net), sizeof(float), nout, f) != nout || fclose(f) != 0) {
        fprintf(stderr, "forward: cannot write %s\n", argv[3]);
        return 1;
    }
    printf("%d x %d x %d x %d -> logits written\n", batch, m.nfeat, m.patch, m.patch);
    wc_model_free(&m);
    return 0;
}
