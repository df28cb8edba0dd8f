/* export.h: `wildcpu export`: a checkpoint's weights as a safetensors file that PyTorch users
 * load into ../shared/bench/torch_ref.py's UNetLite (the same tensor names and layouts:
 * "e1.0.weight" (Cout, Cin, KH, KW) float32 little-endian), with a __metadata__ entry
 * "wildcpu" holding JSON: the architecture and its spec, the patch size, the input channels in
 * order with their normalization (mean, std), and the nodata policy. */
#ifndef WILDCPU_EXPORT_H
#define WILDCPU_EXPORT_H

/* Returns the exit status. The file is written atomically (temporary name, then rename). */
int wc_export_run(const char *checkpoint, const char *out);

#endif
