/*
 * The smallest program of an ABI: started and ended like a workload, it does nothing else.
 * Under an emulator its peak resident memory is what the emulator and the ABI's loader and C
 * library take by themselves; a workload's peak minus this one estimates the program's own.
 */
int main(void)
{
    return 0;
}
