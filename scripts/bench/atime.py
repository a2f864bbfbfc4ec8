"""What O_NOATIME spares: reads the files listed in LIST (never read since written), the first
half one way and the second the other (ORDER: plain-first or noatime-first), 16 threads, and
reports for each half the wall time, the process's system CPU and the sectors written to
DEVICE (e.g. loop0: the block device of the file system holding the files) meanwhile.
Run cold, as root: sync; echo 3 > /proc/sys/vm/drop_caches; python3 atime.py LIST ORDER DEVICE"""
import os, sys, time, threading
DEVICE = sys.argv[3]
files = [l.strip() for l in open(sys.argv[1])]
def run(paths, flags):
    dev0 = int(open(f'/sys/block/{DEVICE}/stat').read().split()[6])
    io0 = dict(l.split(': ') for l in open('/proc/self/io').read().split('\n') if l)
    t0 = time.time(); c0 = os.times()
    it = iter(paths); lock = threading.Lock()
    def work():
        while True:
            with lock:
                p = next(it, None)
            if p is None: return
            fd = os.open(p, os.O_RDONLY | flags); os.read(fd, 1 << 16); os.close(fd)
    ts = [threading.Thread(target=work) for _ in range(16)]
    [t.start() for t in ts]; [t.join() for t in ts]
    os.sync()
    time.sleep(1); os.sync()
    dev1 = int(open(f'/sys/block/{DEVICE}/stat').read().split()[6])
    c1 = os.times(); io1 = dict(l.split(': ') for l in open('/proc/self/io').read().split('\n') if l)
    return dict(files=len(paths), wall=round(time.time()-t0, 2), sys=round(c1.system-c0.system, 2),
                device_write_MB=round((dev1-dev0)*512/1e6, 2), write_MB=round((int(io1['write_bytes'])-int(io0['write_bytes']))/1e6, 1))
half = len(files)//2
first, second = (0, os.O_NOATIME) if sys.argv[2] == 'plain-first' else (os.O_NOATIME, 0)
name = {0: 'plain  ', os.O_NOATIME: 'noatime'}
print(name[first], run(files[:half], first))
print(name[second], run(files[half:], second))
